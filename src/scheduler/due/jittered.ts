import { startOfFire } from '../../schedule/jitter.js';
import type { Source } from '../internal-types.js';

/**
 * When a job trigger's fire time `fireTime` is to start: the fire time plus its jitter offset
 * (schedule/jitter.ts), capped at the gap to the trigger's following fire time; the fire time
 * itself without jitter. Every node computes the same. A tick claims the fire time from then on
 * (due.ts), the loop sleeps until then (loop.ts), and lateness and the misfire threshold count from it.
 */
export function sourceStart(source: Source, fireTime: number): number {
  return startOfFire(source.jitter, source.trigger, source.job, source.scheduleId, fireTime);
}

/**
 * When a job trigger's oldest due work is to start, as far as known before its take — the order
 * in which its fleet limit's permits are asked for (due-permits.ts): its oldest queued
 * occurrence's start, else its next fire time's if on time. A missed one (more than
 * `thresholdMs` before `now`) says nothing yet: the misfire policy decides from the fleet's
 * high-water mark what is replayed — often the latest missed, or nothing — and a cursor far
 * behind that mark (a node back from a partition) would put the node first in line for work it
 * does not have (simulator, mix5 seed 7: a node asking for `+4 s` took the permits and ran
 * `+26 s`). It counts as `now` until the take has decided and queued the replay.
 */
export function oldestStart(source: Source, next: number, now: number, thresholdMs: number): number {
  const q = source.queue[0];
  if (q) return q.at ?? q.fireTime;
  const start = sourceStart(source, next);
  return start < now - thresholdMs ? now : start;
}
