import type { WriteOp } from '../../store/types.js';
import { type Candidate, type Job, movesEntry, shardsOf } from '../internal-types.js';
import { keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { doneHold } from './high-water.js';
import { accountedFor } from './on-record.js';

/**
 * A sharded stored schedule's missed fire time F whose shard 0 this node won to settle F unrun (a
 * misfire skip, or a jump to the one to replay): F is missed only if none of its shards was
 * claimed. Shard 0 carries the entry's move, and a claim takes it first, but a claimant can hold
 * shard 0 and lose it unstarted (its entry look failed twice, its lease lapsed) while its other
 * shards, won in the same acquire, run: settled as missed then, F's shard 0 never ran, and a
 * `misfired` event said F was skipped while its shard 1 ran (simulator, busy faults, `shs`: 68 of
 * 100 seeds; seed 2: `shs/s1@+6 s`). Shard 0's lease is this node's now, so a sibling claimed
 * before it (by the claim that held shard 0) is seen here: held (running, or "done"), or on
 * record (history of attempt 1, in-flight, queued behind its gate).
 *
 * Returns the siblings claimed (none: F is missed, settle it). When some are, the caller gives
 * shard 0 back and this node remembers F as partly claimed (`NodeState.partlyClaimed`, the
 * siblings in `accountedShards`) for a done hold: the next read plans F's unclaimed shards as a
 * run that moves the entry on (due/due-entry.ts), as recovery of a claim that never started.
 */
export async function claimedSiblings(s: NodeState, job: Job, occ: OccurrenceId): Promise<OccurrenceId[]> {
  const others = shardsOf(job)
    .filter((shard) => shard !== occ.shard)
    .map((shard) => ({ ...occ, shard }));
  if (others.length === 0) return [];
  const [leases, onRecord] = await Promise.all([
    Promise.all(others.map((o) => s.store.inspect(keys.occurrence(o)))),
    accountedFor(s, others),
  ]);
  return others.filter((_, i) => leases[i] !== null || onRecord[i] === true);
}

/** Whether the won settle `c` of a missed fire time is refused for a sibling shard claimed (see {@link claimedSiblings}); remembered then. */
export async function settleOfPartlyClaimed(s: NodeState, job: Job, c: Candidate): Promise<boolean> {
  if (c.settleOnly === undefined || shardsOf(job).length < 2) return false;
  const claimed = await claimedSiblings(s, job, c.occ);
  if (claimed.length === 0) return false;
  notePartlyClaimed(s, job, c.settleOnly, claimed);
  return true;
}

/** Remembers F (the entry `settle` moves on from) as partly claimed, `claimed` as its shards not to offer again. */
export function notePartlyClaimed(
  s: NodeState,
  job: Job,
  settle: readonly WriteOp[],
  claimed: readonly OccurrenceId[],
): void {
  const now = s.storeClock.estimate();
  const until = now + doneHold(job);
  const entry = settle.find((op) => op.op === 'delete' && op.key.startsWith(keys.duePrefix));
  if (entry === undefined) return;
  for (const o of claimed) s.accountedShards.hold(keys.occurrence(o), until, now);
  s.partlyClaimed.hold(entry.key, until, now);
  s.dueWakeAt = 0;
}

/**
 * The other side of {@link claimedSiblings}: a won claim of a sharded stored schedule's shard
 * after the first of missed fire time F — a replay's or a recovery's (on time, shards go to their
 * preferred nodes at once and are not looked at) — whose shard 0 is held and not on record: a
 * node holds it to settle F as missed (a settle holds shard 0 "done" and records nothing), or
 * about to start it. Given back, the shard runs only if F does: a start of shard 0 moves the entry
 * naming F, whose readers offer F's other shards again (due/pending-shards.ts); a settle skips it
 * with the rest. Run, it ran beside the settle's skip (simulator, busy faults, `shs`: a shard
 * replayed after the node that settled F had looked at its siblings). Shard 0 free is claimable
 * by anyone, and its claimant looks at this shard then (`claimedSiblings`).
 */
export async function behindHeldShardZero(s: NodeState, job: Job, c: Candidate): Promise<boolean> {
  const first = shardsOf(job)[0];
  if (
    c.occ.scheduleId === undefined ||
    c.occ.shard === first ||
    c.source === 'schedule' ||
    c.fromPending === true ||
    movesEntry(c)
  )
    return false;
  const zero = { ...c.occ, shard: first };
  const [lease, [onRecord]] = await Promise.all([
    s.store.inspect(keys.occurrence(zero)),
    accountedFor(s, [zero]),
  ]);
  return lease !== null && onRecord !== true;
}
