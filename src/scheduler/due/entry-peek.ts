import { SPREAD_GRACE_MS } from '../control/spread.js';
import { type Job, shardsOf, startOf } from '../internal-types.js';
import type { NodeState } from '../node-state.js';
import type { DueEntry } from './due-entry.js';
import type { Due1 } from './due-permits.js';

/**
 * When a due entry's oldest work claimable here now is to start, looked at without taking it or
 * deciding its plan — for a limited job whose permits ran out, its place in line (due-permits.ts).
 * `undefined`: nothing claimable here now (held for its preferred node, or not due yet), or not
 * known before its plan (a missed entry: the misfire policy decides what runs). A plan is decided
 * once (due-entry.ts, planEntry): made by a take of nothing while the job waited for permits, it
 * was stale when they came, and more fire times of limited stored schedules were lost (simulator,
 * 3 nodes, sim faults, `lim,rl,mc,pages`: 53 and 60 seeds of 150 failing instead of 43 and 39).
 */
export function peekEntry(state: NodeState, job: Job, e: DueEntry, now: number): number | undefined {
  const count = job.spec.shards?.count;
  const grace = e.graceMs ?? SPREAD_GRACE_MS;
  if (e.plan) {
    let oldest: number | undefined;
    for (const c of e.plan) {
      const start = startOf(c);
      if (c.settleOnly || state.spread.claimableAt(c.occ, count, grace, start) > now) continue;
      oldest = Math.min(oldest ?? start, start);
    }
    return oldest;
  }
  if (e.at < now - job.spec.misfireThresholdMs) return undefined;
  const s = e.schedule;
  for (const shard of shardsOf(job)) {
    const occ = { job: s.job, scheduleId: s.id, fireTime: e.fireTime, shard };
    if (state.spread.claimableAt(occ, count, grace, e.at) <= now) return e.at;
  }
  return undefined;
}

/** A due entry's part as a due item of a limited job (due-permits.ts): nothing when its job has no fleet limit. */
export function limitedEntry(state: NodeState, job: Job, e: DueEntry, now: number): Partial<Due1> {
  if (!state.limits.limited(job.spec)) return {};
  return { limited: job, start: e.at, peek: () => peekEntry(state, job, e, now) };
}
