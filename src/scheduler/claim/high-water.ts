import type { WriteOp } from '../../store/types.js';
import type { Job } from '../internal-types.js';
import { keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';

/** A finished occurrence stays claimed ("done") at least this long after its fire time. */
const MIN_DONE_HOLD_MS = 3_600_000;

/**
 * The high-water mark of a job's own trigger (`hwm|<job>|`): the latest fire time
 * handled (run, or missed and skipped). A late node checks it, and the claims still held, before
 * it calls a fire time missed.
 */
export class HighWater {
  /** The highest fire time whose high-water mark this node wrote, per mark key. */
  private readonly highWaterWritten = new Map<string, number>();

  constructor(private readonly state: NodeState) {}

  /** Raises the high-water mark; a concurrent lower write can only make a later check more careful, never re-run work (claims are per occurrence). */
  async raiseHighWater(key: string, fireTime: number): Promise<void> {
    const current = await this.state.store.get(key);
    if (current === null || Number(current) < fireTime) await this.state.store.put(key, String(fireTime));
  }

  /**
   * The mark write of a run's start batch (and of a skipped or queued occurrence): only for fire
   * times of the job's own trigger (a manual trigger needs none; a stored schedule's due entry
   * moves on instead, see due-entry.ts) and only if higher than what this node wrote before.
   * It is a plain put, so two nodes starting out of order can lower it by a little; the occurrences
   * in between stay claimed (running, then "done" for at least an hour), which a late node checks
   * first — or, queued behind their gate, have a pending record, which a late node's misfire scan
   * checks too (due/misfire.ts `unclaimed`).
   */
  highWaterOp(occ: OccurrenceId): WriteOp | undefined {
    if (occ.scheduleId !== undefined) return undefined;
    const key = keys.highWater(occ.job, occ.scheduleId);
    if ((this.highWaterWritten.get(key) ?? Number.NEGATIVE_INFINITY) >= occ.fireTime) return undefined;
    this.highWaterWritten.set(key, occ.fireTime);
    return { op: 'put', key, value: String(occ.fireTime) };
  }
}

/** How long a finished occurrence of the job stays claimed ("done") after its fire time. */
export function doneHold(job: Job): number {
  return Math.max(MIN_DONE_HOLD_MS, 10 * job.spec.misfireThresholdMs);
}

/**
 * Whether a lease of the job's occurrence at `fireTime` is a claim still to be settled (running,
 * or claimed and not started), not a "done" hold: a hold lasts at least a done hold after the
 * fire time, a claim's lease far less.
 */
export function heldNotDone(lease: { expiresAt: number }, fireTime: number, job: Job): boolean {
  return lease.expiresAt < fireTime + doneHold(job) / 2;
}

/**
 * Until when a settled occurrence stays claimed ("done"): `holdMs` after its fire time, and at
 * least `holdMs` after it was settled (store time, over-estimated from the grant plus the local
 * time since just before the acquire was sent). The second bound matters for fire times settled
 * long after they fell due (a replay after an outage, a due entry far behind): a node that read
 * the same entry or source before this one moved it on, and claims it up to `holdMs` later, still
 * finds it held — and one later than that is refused by its own late check (claim.ts).
 */
export function doneUntil(
  fireTime: number,
  lease: { acquiredAt: number },
  sentAt: number,
  monotonicNow: number,
  holdMs: number,
): number {
  return Math.max(fireTime, lease.acquiredAt + Math.max(0, monotonicNow - sentAt)) + holdMs;
}
