import { nextFireTimes } from '../../schedule/fire-times.js';
import { scheduledAt } from '../../schedule/jitter.js';
import type { Source } from '../internal-types.js';

/**
 * When a job trigger's fire time `fireTime` is to start: the fire time plus its jitter offset
 * (schedule/jitter.ts), capped at the gap to the trigger's following fire time; the fire time
 * itself without jitter. Every node computes the same. A tick claims the fire time from then on
 * (due.ts), the loop sleeps until then (loop.ts), and lateness and the misfire threshold count from it.
 */
export function sourceStart(source: Source, fireTime: number): number {
  const jitter = source.jitter;
  if (jitter === undefined) return fireTime;
  // Cron fire times are memoised per trigger (fire-times.ts); `every` is arithmetic.
  const following = nextFireTimes(source.trigger, fireTime, 1)[0];
  return scheduledAt(jitter, source.job, source.scheduleId, fireTime, following);
}
