/**
 * A job trigger, and a stored schedule, with a fresh jitter offset per fire time (`jitter: { max,
 * per: 'fire' }`), paused and resumed: a fire time whose own start is missed is handled by the
 * misfire policy at once, and `run-once` replays exactly one fire time, the latest missed.
 * - The bound on "missed" allowed for the largest offset (the other fire times' were not known);
 *   below the fire time in hand it held that one back until the bound had passed it — here
 *   +15 s, whose start is before the resume at 16 s, was replayed at 19.7 s instead of 16.7 s (an
 *   offset of up to `max` later: minutes with a jitter of minutes). due/due.ts, `before`.
 * - Then, the bound still below +15 s, the first decision after the resume took +10 s for the
 *   latest missed and replayed it, and the next one replayed +15 s too: two runs where run-once
 *   promises one. The bound is exact now (schedule/jitter.ts, missedBound): +10 s is on record
 *   skipped (`paused`), +15 s runs.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimJob, type SimulateOptions, simulate } from '../src/testing/index.js';

const jitter = { max: '4500ms', per: 'fire' as const };
const options = { misfireThreshold: '200ms', lockAtMostFor: '3s' };

const cases: { what: string; job: SimJob; at: string }[] = [
  {
    what: "a job's own trigger",
    job: {
      name: 'jp',
      options: { every: '5s', jitter, ...options },
      runMs: [50, 100],
      pauses: [{ at: 6_000, resumeAt: 16_000 }],
    },
    at: 'jp@',
  },
  {
    what: 'a stored schedule',
    job: {
      name: 'jps',
      options,
      runMs: [50, 100],
      schedules: [{ id: 's1', every: '5s', jitter }],
      pauses: [{ scheduleId: 's1', at: 6_000, resumeAt: 16_000 }],
    },
    at: 'jps/s1@',
  },
];

describe('simulate: a missed fire time with a fresh jitter offset is handled at once', () => {
  for (const { what, job, at } of cases)
    it(`${what}: the latest missed is replayed right after the resume, and only it`, async () => {
      const sim: SimulateOptions = { seed: 1, nodes: 1, durationMs: 40_000, faults: {}, jobs: [job] };
      const result = await simulate(sim);
      const report = formatReport(sim, result);
      expect(result.violations, report).toEqual([]);
      const starts = (f: number) => result.trace.filter((l) => l.includes(` start    ${at}+${f}.000s `));
      const replay = starts(15).find((l) => l.includes('source=misfire'));
      expect(replay, report).toBeDefined();
      // Virtual seconds: the resume is at 16 s; a poll and a tick later, not seconds later.
      expect(Number.parseFloat(replay!.trim())).toBeLessThan(17.5);
      // +10 s passed during the pause too: not replayed as well (run-once replays one).
      expect(starts(10), report).toEqual([]);
    });
});
