import { SPREAD_GRACE_MS } from '../control/spread.js';
import { type Job, shardsOf, startOf } from '../internal-types.js';
import type { NodeState } from '../node-state.js';
import type { DueEntry } from './due-entry.js';
import type { Due1 } from './due-permits.js';

/**
 * The starts (fire time plus jitter) of a due entry's work claimable here now, one per claim,
 * looked at without taking it or deciding its plan — for a limited job, what a reservation asks
 * permits for, and, when its permits ran out, its place in line (due-permits.ts). Empty: nothing
 * claimable here now (held for its preferred node, or not due yet); `undefined`: not known before
 * its plan (a missed entry: the misfire policy decides what runs). A plan is decided once
 * (due-entry.ts, planEntry): made by a take of nothing while the job waited for permits, it was
 * stale when they came, and more fire times of limited stored schedules were lost (simulator, 3
 * nodes, sim faults, `lim,rl,mc,pages`: 53 and 60 seeds of 150 failing instead of 43 and 39).
 */
export function claimableStarts(state: NodeState, job: Job, e: DueEntry, now: number): number[] | undefined {
  const count = job.spec.shards?.count;
  const grace = e.graceMs ?? SPREAD_GRACE_MS;
  const starts: number[] = [];
  if (e.plan) {
    for (const c of e.plan) {
      const start = startOf(c);
      if (!c.settleOnly && state.spread.claimableAt(c.occ, count, grace, start) <= now) starts.push(start);
    }
    return starts;
  }
  if (e.at < now - job.spec.misfireThresholdMs) return undefined;
  const s = e.schedule;
  for (const shard of shardsOf(job)) {
    const occ = { job: s.job, scheduleId: s.id, fireTime: e.fireTime, shard };
    if (state.spread.claimableAt(occ, count, grace, e.at) <= now) starts.push(e.at);
  }
  return starts;
}

/** A due entry's part as a due item of a limited job (due-permits.ts): nothing when its job has no fleet limit. */
export function limitedEntry(state: NodeState, job: Job, e: DueEntry, now: number): Partial<Due1> {
  if (!state.limits.limited(job.spec)) return {};
  return { limited: job, start: e.at, claimable: () => claimableStarts(state, job, e, now) };
}

/**
 * Whether entries read and still to be offered (`ready`) wait for this node's free slots (or
 * another node's grace): no read of the due index then — it could take nothing more.
 *
 * A job with fleet limits: its entries do not hold the reads back while they may wait for its
 * permits, which the fleet frees at no known time (a rate limit's backlog of 100,000 mails at
 * 500 a second lasts minutes), or every other stored schedule on the node waited behind them
 * (simulator: 45 one-shots under 3 starts per second, another job's schedules every second ran
 * 8-11 s late for the 15 s of the backlog). Except, under a rate limit alone, an entry claimable
 * here now when the last tick ran out of slots (`slotsShort`) and its job was granted all it
 * asked for: it waits for slots like any other's. When such entries never held a read back, a
 * fan-out of 100,000 under a rate limit above its pace read the index at every tick, ~280,000
 * rows per node instead of ~90,000, for 1.4× the node CPU per occurrence (bench:scale --quick
 * --variant rate). Held back whenever the job was not short of permits, without `slotsShort`,
 * an entry kept for another reason (its schedule's page in flight, say) held other jobs' entries
 * unread: two simulator sweeps lost fire times of a `maxConcurrency` job's catch-up chains, as
 * they did with such a job's entries held back too (test/simulate-stalled-resumed.test.ts).
 */
export function waitForSlots(s: NodeState, ready: readonly DueEntry[], slotsShort: boolean): boolean {
  let now: number | undefined;
  for (const e of ready) {
    const job = s.defined.get(e.schedule.job);
    if (job === undefined || !s.limits.limited(job.spec)) return true;
    // Under maxConcurrency (too) as before: see below.
    if (!slotsShort || job.spec.limits?.maxConcurrency !== undefined) continue;
    if (s.limits.waitsForPermits(job.spec.name)) continue;
    now ??= s.storeClock.estimate();
    if (claimableStarts(s, job, e, now)?.length !== 0) return true;
  }
  return false;
}
