/**
 * A job trigger with a fresh jitter offset per fire time (`jitter: { max, per: 'fire' }`), paused
 * and resumed: a fire time whose own start is missed is handled by the misfire policy at once.
 * The bound on "missed" allows for the largest offset (the other fire times' are not known); below
 * the fire time in hand it held that one back until the bound had passed it — here +15 s, whose
 * start is before the resume at 16 s, was replayed at 19.7 s instead of 16.7 s (an offset of up to
 * `max` later: minutes with a jitter of minutes). due/due.ts, `before`.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';

describe('simulate: a missed fire time with a fresh jitter offset is handled at once', () => {
  it('is replayed right after the resume, not once the largest offset has passed', async () => {
    const options: SimulateOptions = {
      seed: 1,
      nodes: 1,
      durationMs: 40_000,
      faults: {},
      jobs: [
        {
          name: 'jp',
          options: {
            every: '5s',
            jitter: { max: '4500ms', per: 'fire' },
            misfireThreshold: '200ms',
            lockAtMostFor: '3s',
          },
          runMs: [50, 100],
          pauses: [{ at: 6_000, resumeAt: 16_000 }],
        },
      ],
    };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
    const replay = result.trace.find((l) => / start +jp@\+15\.000s .*source=misfire/.test(l));
    expect(replay, formatReport(options, result)).toBeDefined();
    // Virtual seconds: the resume is at 16 s; a poll and a tick later, not seconds later.
    expect(Number.parseFloat(replay!.trim())).toBeLessThan(17.5);
  });
});
