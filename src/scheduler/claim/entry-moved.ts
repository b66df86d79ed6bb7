import type { WriteOp } from '../../store/types.js';
import { keys } from '../keys.js';
import type { NodeState } from '../node-state.js';

/**
 * Whether the due entry that `ops` move on (their delete of a `due|` key) is no longer where this
 * node read it: a claim won from a stale read of the due index. Every claim that handles the
 * entry's fire time moves the entry in the same batch — a run's start, a queue behind the gate, a
 * skip, a misfire settle — so an entry gone means the fire time was handled since this node's
 * read, and a batch that moves it again puts back an entry beside the live one (the move is a
 * delete and a put: the put lands whatever the delete found). One get; the due index is read
 * again (`dueWakeAt`). Asked by every per-occurrence claim of a due entry once its occurrence is
 * won (claim.ts: misfire settles, replays, starts, queues and skips alike); a page's claim moves
 * its entries with a compare-and-move instead. A look and then a write, sound because every
 * claimant that moves the entry of fire time F holds F's occurrence lease while it does: under
 * this claim's lease nobody else moves it between the two (a claimant that freed the lease had
 * moved the entry before, which the look sees).
 *
 * - Simulator seed 90 of test/simulate-waiting-backlog.test.ts: a misfire replay of pq/q4@+5 s
 *   started (its start batch moved the entry) and lost its lease at once; a node whose read
 *   predated that start won the occurrence a lease later and settled it "done" as missed over the
 *   dead run, which recovery then passed over (`unfinished`).
 * - Seed 326 of test/simulate-lost-replies-queue.test.ts: stored/a@+11 s was queued behind its
 *   gate by one node (the queue frees the occurrence and moves the entry to +12 s); a node that had
 *   read the entry at +11 s just before won the freed occurrence, found the gate taken and queued
 *   it again with its move — retried after a lost request, once the entry had moved on to +13 s:
 *   the entry at +12 s came back, a node settled +12..+14 s from it as missed (+13 s had run), and
 *   +11 s, superseded by +12 s, was replaced by nothing (the checker's superseded chain).
 * - Seed 410 of test/simulate-replay-stale-entry.test.ts: a replay of sq/a@+10 s, adopted after a
 *   lost answer, moved the entry from +10 s to +11 s after another node had queued both and moved
 *   it to +12 s; the copy at +11 s was settled as missed, and the queued +11 s dropped: lost.
 * - Simulator seed 76 of `jex,sb` (a stored schedule under 'queue-all' with maxRuns 10): a node
 *   won sb/b0@+7 s, freed by the node that had queued it, found the gate free and started it with
 *   its move from +7 s to +8 s and the count from 4 to 3, while the entry and count were at +10 s
 *   and 1: two chains of the schedule ran, 12 runs.
 */
export async function entryMoved(s: NodeState, ops: readonly WriteOp[] | undefined): Promise<boolean> {
  const entry = ops?.find((op) => op.op === 'delete' && op.key.startsWith(keys.duePrefix));
  if (entry === undefined || (await s.store.get(entry.key)) !== null) return false;
  s.dueWakeAt = 0;
  return true;
}
