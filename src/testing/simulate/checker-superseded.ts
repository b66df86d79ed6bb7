import { gateOf } from '../../scheduler/keys.js';
import type { CheckedJob } from './checker-types.js';
import type { History, StoredSkip } from './history.js';

/**
 * Whether a stored `superseded` skip is borne out (see checker.ts, checkSkips): the queued fire
 * time it names (`byFireTime`) ran — or, superseded in turn before it ran, the fire time that
 * replaced it, and so on (as the public checker, history-skips.ts). A link skipped for overlap
 * ends the chain too: coalesced into a fire time a going run overlapped (that skip is judged on
 * its own). Judged for fire times inside the checked window, as "lost" is; a chain that leaves
 * the window may end in a fire time still queued when the simulation stops.
 */
export function supersededJudge(
  history: History,
  jobs: readonly CheckedJob[],
): (skip: StoredSkip) => boolean {
  const judged = new Set<string>();
  for (const job of jobs) {
    for (const t of job.fireTimes) judged.add(`${job.name}||${t}`);
    for (const sc of job.schedules ?? [])
      for (const t of sc.required) judged.add(`${job.name}|${sc.id}|${t}`);
  }
  const inWindow = (skip: StoredSkip, t: number) => judged.has(`${skip.job}|${skip.scheduleId ?? ''}|${t}`);
  // Fire times that ran (a handler started), superseded skips and overlap skips, by gate.
  const ran = new Set(history.invocations.map((inv) => `${gateOf(inv)}|${inv.fireTime}`));
  const supersededBy = new Map<string, number | undefined>();
  const overlapped = new Set<string>();
  for (const skip of history.skips)
    if (skip.reason === 'superseded') supersededBy.set(`${gateOf(skip)}|${skip.fireTime}`, skip.byFireTime);
    else if (skip.reason === 'overlap') overlapped.add(`${gateOf(skip)}|${skip.fireTime}`);
  return (skip) => {
    if (!inWindow(skip, skip.fireTime)) return true;
    const gate = gateOf(skip);
    for (let t = skip.byFireTime, after = skip.fireTime; t !== undefined && t > after; ) {
      if (ran.has(`${gate}|${t}`) || overlapped.has(`${gate}|${t}`) || !inWindow(skip, t)) return true;
      after = t;
      t = supersededBy.get(`${gate}|${t}`);
    }
    return false;
  };
}
