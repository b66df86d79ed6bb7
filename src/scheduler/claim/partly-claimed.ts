import type { Lease, WriteOp } from '../../store/types.js';
import { type Candidate, type Job, movesEntry, shardsOf, startOf } from '../internal-types.js';
import { gateScope, keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { doneHold, heldNotDone } from './high-water.js';
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
  const looked = await heldOrOnRecord(s, others);
  return others.filter((_, i) => looked[i]!.held !== null || looked[i]!.onRecord);
}

/** Each occurrence's lease (one inspect) and whether it is on record (on-record.ts), read together. */
async function heldOrOnRecord(
  s: NodeState,
  occs: readonly OccurrenceId[],
): Promise<{ held: Lease | null; onRecord: boolean }[]> {
  const [leases, onRecord] = await Promise.all([
    Promise.all(occs.map((o) => s.store.inspect(keys.occurrence(o)))),
    accountedFor(s, occs),
  ]);
  return leases.map((held, i) => ({ held, onRecord: onRecord[i] === true }));
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
 * after the first of fire time F — a replay's or a recovery's, or an on-time one granted past the
 * misfire threshold after its start (planned on time at a read, claimed seconds later: its node
 * stalled or waited for slots; a prompt on-time claim is not looked at, shards go to their
 * preferred nodes at once) — runs only if F does. Run beside a settle of F, it ran while F was
 * said skipped (simulator, busy faults, `shs`: seed 10, `shs/s1@+10 s#1` replayed after the node
 * that settled `+10 s` had looked at its siblings; seed 12, `shs/s0@+4 s#1` planned on time at
 * 4 s, granted at 11.7 s, 3 s after the settle). Shard 0, not on record (no history, in-flight or
 * queued record):
 * - held "done" (a done hold): settled as missed — given back, F is skipped;
 * - held otherwise: claimed, to be settled or started — given back and watched (claim/watch.ts):
 *   looked at after that lease, and recovered if F ran by then. Dropped, a shard whose shard 0
 *   then ran seconds late was lost: the moved entry offers F's shards again only within two
 *   leases of F's start (busy, seed 3: `shs/s0@+4 s#1`);
 * - free: anyone's to claim, and its claimant looks at this shard then (`claimedSiblings`): run.
 * Returns whether the claim is given back.
 */
export async function behindHeldShardZero(
  s: NodeState,
  job: Job,
  c: Candidate,
  lease: Lease,
): Promise<boolean> {
  const first = shardsOf(job)[0];
  if (
    gateScope(c.occ) === undefined || // a job's own trigger, a manual one: no due entry
    (c.source !== 'schedule' && c.source !== 'misfire' && c.source !== 'recover') ||
    c.occ.shard === first ||
    c.fromPending === true ||
    movesEntry(c) ||
    (c.source === 'schedule' && lease.acquiredAt <= startOf(c) + job.spec.misfireThresholdMs)
  )
    return false;
  const zero = { ...c.occ, shard: first };
  const { held, onRecord } = (await heldOrOnRecord(s, [zero]))[0]!;
  if (held === null || onRecord) return false;
  if (heldNotDone(held, c.occ.fireTime, job)) s.heldElsewhere(c);
  return true;
}
