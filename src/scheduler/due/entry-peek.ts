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
