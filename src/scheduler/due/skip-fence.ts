import type { Lease, LeaseRequest, WriteOp } from '../../store/types.js';
import { MAX_BATCH } from '../../store/validate.js';
import { doneHold, doneUntil } from '../claim/high-water.js';
import { settle } from '../finish/settle.js';
import { type Job, type Source, shardsOf } from '../internal-types.js';
import { keys } from '../keys.js';
import type { NodeState } from '../node-state.js';

/**
 * What {@link fenceSkips} got: every claim (`held`), or the fire times of which another node holds
 * a claim (`refused`).
 */
export type Fenced =
  | { held: FencedClaim[]; sentAt: number }
  | { refused: number[]; granted: FencedClaim[]; sentAt: number };

/** One occurrence claimed by a fence. */
export interface FencedClaim {
  lease: Lease;
  fireTime: number;
}

/**
 * Claims the occurrences (every shard) of the missed fire times a node is about to say it skipped
 * (misfire.ts), before it says so. A look at their leases alone does not order the skip after a
 * claim of them: a node's on-time claim decided at its tick, or a replay waiting for a fleet
 * permit (due-permits.ts), reached the store after the look, and the fire time ran while a
 * `misfired` event said it was skipped (simulator, `ran-and-skipped`: `jrl`, a sharded trigger
 * under a rate limit, in most busy seeds; the scheduler suite's pause test on a loaded CI host).
 * Claimed, the skip and any later claim meet at the store: the later one is refused (the fire
 * time is held "done" once the skip is said, {@link endFence}), or the skip is (`refused`:
 * that fire time, and those before it, are the other claimant's to handle, as a held one is).
 * Only the latest fire times a node lists (a stretch's latest, `HELD_LOOKBACK` at most, and as
 * many as fit MAX_BATCH claims): older ones of a long outage are past any claim a live node
 * still makes.
 */
export async function fenceSkips(
  s: NodeState,
  job: Job,
  source: Source,
  fireTimes: readonly number[],
): Promise<Fenced> {
  const shards = shardsOf(job);
  // The latest that fit one acquire and one write (at least the latest): the ones a claim still
  // races for. All of a long stretch of a job of many shards overflowed the write that holds
  // them (more than MAX_BATCH ops: refused, retried until the claims lapsed, and every one was
  // recovered — 200 shards, nine fire times skipped after a pause, 408 runs of skipped shards).
  const latest = fireTimes.slice(-Math.max(1, Math.floor(MAX_BATCH / shards.length)));
  // Its own owner: claims of an acquire whose answer was lost are found and given back by it.
  const owner = `${s.node}${SKIP_MARK}`;
  const requests: LeaseRequest[] = latest.flatMap((fireTime) =>
    shards.map((shard) => ({
      key: keys.occurrence({ job: source.job, scheduleId: source.scheduleId, fireTime, shard }),
      owner,
      leaseMs: job.spec.lockAtMostForMs,
    })),
  );
  const sentAt = s.clock.monotonic();
  let leases: (Lease | null)[];
  try {
    leases = await s.store.acquire(requests);
  } catch (err) {
    forget(s, requests, owner, sentAt + job.spec.lockAtMostForMs);
    throw err;
  }
  const granted: FencedClaim[] = [];
  const refused = new Set<number>();
  leases.forEach((lease, i) => {
    const fireTime = latest[Math.floor(i / shards.length)]!;
    if (lease !== null) granted.push({ lease, fireTime });
    else refused.add(fireTime);
  });
  return refused.size === 0 ? { held: granted, sentAt } : { refused: [...refused], granted, sentAt };
}

/** Marks the owner of a fence's claims (`<node>` + this): nothing else claims an occurrence so. */
const SKIP_MARK = '+skip';

/**
 * An acquire of a fence that got no answer may have been granted: its claims would hold the fire
 * times, unrun and unsaid, until they lapse, and be recovered then as claims never started —
 * late runs of fire times the policy skips (simulator, `m5lim`, a rate-limited sharded trigger:
 * recovered behind its saturated gate, not all by the end). Given back as soon as the store
 * answers, in the background, until they would have lapsed anyway.
 */
function forget(s: NodeState, requests: readonly LeaseRequest[], owner: string, endsAt: number): void {
  const task = (async () => {
    for (let failures = 0; s.clock.monotonic() < endsAt && !s.abandon.signal.aborted; failures++) {
      try {
        const held = await Promise.all(requests.map((r) => s.store.inspect(r.key)));
        const ops: WriteOp[] = held
          .filter((l): l is Lease => l !== null && l.owner === owner)
          .map((l) => ({ op: 'release', key: l.key, token: l.token }));
        if (ops.length > 0) await s.store.apply(ops);
        return;
      } catch {
        const delay = Math.min(2_000, 100 * 2 ** Math.min(failures, 5), endsAt - s.clock.monotonic());
        await s.clock.sleep(Math.max(0, delay), s.abandon.signal);
      }
    }
  })();
  s.running.add(task);
  void task.finally(() => s.running.delete(task));
}

/**
 * Ends a fence's claims: held "done" (`hold`, as a stored schedule's settled misfire is held: any
 * claim of them from now on is refused, and recovery takes them for handled), written as the skip
 * is said; or given back (another node's claim came first). A failed write is retried until the
 * leases would end on their own (settle.ts).
 */
export async function endFence(
  s: NodeState,
  job: Job,
  claims: readonly FencedClaim[],
  sentAt: number,
  hold: boolean,
): Promise<void> {
  if (claims.length === 0) return;
  const now = s.clock.monotonic();
  const ops: WriteOp[] = claims.map(({ lease, fireTime }) => ({
    op: 'release',
    key: lease.key,
    token: lease.token,
    ...(hold && { holdUntil: doneUntil(fireTime, lease, sentAt, now, doneHold(job)) }),
  }));
  await settle(s, `misfire handling of ${job.spec.name}`, ops, claims[0]!.lease, sentAt);
}
