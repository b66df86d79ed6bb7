import { nextFireTimes } from './fire-times.js';
import type { CompiledTrigger } from './trigger.js';

/** How many fire times back croner's backward search starts the forward walk, in turn. */
const WALK_BACK = [2, 16] as const;

/**
 * The latest fire time of `trigger` at or before `at` (epoch ms), or `undefined` when there is
 * none yet (an `at` still ahead, a cron whose first fire time is later). Pure, like
 * {@link nextFireTimes}: the same instant gives the same answer on every node, which is what lets
 * a tick that came late be snapped back to the fire time it stands for.
 *
 * - `every`: the multiple of the interval counted from the Unix epoch at or before `at`.
 * - `cron`: fire times are defined by walking forward (what `fireTimes` and the scheduler use), so
 *   croner's backward search (`previousRuns`) only finds a starting point a couple of fire times
 *   back, and the forward walk from there decides. Where the two could disagree (a DST fall-back
 *   hour), the walk wins; if it finds nothing from two fire times back it starts from sixteen.
 *
 * @example
 * latestFireTime(compileTrigger({ every: '10s' }), Date.parse('2026-01-01T12:00:13.250Z')); // …12:00:10.000Z
 * latestFireTime(compileTrigger({ cron: '0 9 * * *', timezone: 'Europe/Berlin' }), Date.now());
 */
export function latestFireTime(trigger: CompiledTrigger, at: number): number | undefined {
  switch (trigger.kind) {
    case 'every':
      return Math.floor(at / trigger.everyMs) * trigger.everyMs;
    case 'at':
      return trigger.at <= at ? trigger.at : undefined;
    case 'cron':
      return latestCron(trigger, at);
    case 'bounded': {
      // Inclusive bounds (schedule/bounds.ts): the latest at or before min(at, endAt), if not before startAt.
      const latest = latestFireTime(trigger.inner, Math.min(at, trigger.endAt));
      return latest !== undefined && latest >= trigger.startAt ? latest : undefined;
    }
  }
}

function latestCron(trigger: Extract<CompiledTrigger, { kind: 'cron' }>, at: number): number | undefined {
  for (const back of WALK_BACK) {
    // previousRuns is strictly before its reference: `at + 1` includes a fire time exactly at `at`.
    const found = trigger.pattern.previousRuns(back, new Date(at + 1));
    const anchor = found.at(-1)?.getTime();
    if (anchor === undefined) return undefined;
    let latest: number | undefined;
    let cursor = anchor - 1;
    for (;;) {
      const next = nextFireTimes(trigger, cursor, 1)[0];
      if (next === undefined || next > at) break;
      latest = next;
      cursor = next;
    }
    if (latest !== undefined) return latest;
  }
  return undefined;
}
