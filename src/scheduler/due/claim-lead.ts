import { nextFireTimes } from '../../schedule/fire-times.js';
import type { Job, Source } from '../internal-types.js';
import type { NodeState } from '../node-state.js';

/**
 * How far ahead of its start an on-time fire time of a job's own trigger is claimed, on the node
 * that goes first for it (spread.ts). Quartz's fire-ahead window, for the same reason: with 1,000
 * jobs due together the claim, the in-flight record and the high-water mark of each node's share
 * took 150–250 ms on a 2-core machine, all of it lateness when the claim waited for the fire time.
 * Claimed ahead, they are paid before it; each handler waits for its start on the store clock
 * (claim.ts keeps a grant that came early, run.ts holds the handler back).
 *
 * What it costs users (docs/pause.md, docs/scale.md): a pause or removal that comes within this
 * window of a fire time already claimed does not stop that run. Never ahead:
 *  - another node's share (a takeover waits for the spread grace from the start, as before);
 *  - overlap `replace`: claimed ahead, a fire time would abort the running run before its time;
 *  - `lockAtLeastFor`: its hold counts from the grant, and would end early;
 *  - jobs with fleet limits: permits are reserved for what starts now (due-permits.ts);
 *  - stored schedules' due entries (they have their own claim ahead, due-index.ts);
 *  - replays of missed fire times, recoveries and manual triggers.
 *  - a trigger that fires more often than every 4 × the lead: two of its fire times in one claim
 *    would race for its overlap gate;
 *  - a fire time whose claim ahead was given back (`Source.notAhead`, claim.ts);
 *  - a job with an overlap gate that had a run in flight at the node's last poll
 *    (`NodeState.jobsInFlight`): its gate would likely be refused to the claim ahead, which then
 *    gives the occurrence back and claims it again at the start — two more store calls, each one
 *    more chance of a lost reply (simulator: 2 of 300 seeds lost a fire time, 0 before).
 * At most an eighth of `lockAtMostFor`, so that a grant this early is always kept (claim.ts keeps
 * one at most a quarter of it early).
 */
export const CLAIM_LEAD_MS = 250;

/** The claim lead of the job's own trigger on this node (see {@link CLAIM_LEAD_MS}); 0: not ahead. */
export function claimLead(state: NodeState, job: Job): number {
  const { spec } = job;
  if (spec.overlap === 'replace' || spec.lockAtLeastForMs > 0 || state.limits.limited(spec)) return 0;
  if (spec.overlap !== 'allow' && state.jobsInFlight.has(spec.name)) return 0;
  return Math.min(CLAIM_LEAD_MS, Math.floor(spec.lockAtMostForMs / 8));
}

/** The claim lead of one fire time of a job's own trigger (see {@link CLAIM_LEAD_MS}); 0: claimed at its start. */
export function sourceLead(state: NodeState, job: Job, source: Source, fireTime: number): number {
  if (fireTime === source.notAhead) return 0;
  const lead = claimLead(state, job);
  if (lead === 0) return 0;
  // Cron fire times are memoised per trigger (fire-times.ts); `every` is arithmetic.
  const following = nextFireTimes(source.trigger, fireTime, 1)[0];
  return following === undefined || following - fireTime >= 4 * lead ? lead : 0;
}
