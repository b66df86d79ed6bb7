/**
 * The misfire policies after a pause, in the deterministic simulator: what a resume settles.
 *
 * - Fire times missed *before* a pause (the whole fleet down from 2.5 s, the pause from 5 s) are a
 *   plain misfire, said by a `misfired` event; the `paused` span on record holds only the fire
 *   times from the misfire threshold before the pause on (control/pause-span.ts, `pausedPart`).
 *   Before, the span started at the first missed fire time, +3 s, and the checker called the
 *   pause's record of it unjustified (docs/pause.md: the span is the fire times that passed while
 *   paused; `checkHistory` accepts a `paused` skip only inside a pause). Tested here for a job's
 *   own trigger (due/misfire.ts); a stored schedule's span is written by due/due-entry.ts, which
 *   still starts it at the first missed fire time (the three-job sweep's seeds 5 and 6).
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimJob, type SimulateOptions, simulate } from '../src/testing/index.js';

/** The `paused` spans on record: occurrence stream, first and last fire time (virtual s). */
function pausedSpans(trace: readonly string[]) {
  return trace.flatMap((l) => {
    const m = /stored\s+(\S+)@\+(-?[\d.]+)s skipped \(paused last=\+(-?[\d.]+)s\)/.exec(l);
    return m ? [{ stream: m[1]!, first: Number(m[2]), last: Number(m[3]) }] : [];
  });
}

describe('simulate: fire times missed before a pause', () => {
  /** Both nodes down from 2.5 s to 6.5 s and 6.8 s; the pause from 5 s to 10 s. */
  const outage = (jobs: SimJob[]): SimulateOptions => ({
    seed: 1,
    nodes: 2,
    healthyNodes: 0,
    durationMs: 20_000,
    jobs,
    plan: {
      crashes: [
        { node: 0, at: 2_500, downMs: 4_000, newId: false },
        { node: 1, at: 2_500, downMs: 4_300, newId: false },
      ],
      partitions: [],
      drift: [0, 0],
      skew: [0, 0],
    },
  });

  it("a job's own trigger: the paused span starts at the pause (less the threshold), the fire time before is a misfire", async () => {
    for (const misfire of ['skip', 'run-once'] as const) {
      const options = outage([
        {
          name: 'tick',
          options: { every: '1s', lockAtMostFor: '3s', misfire },
          runMs: [20, 100],
          pauses: [{ at: 5_000, resumeAt: 10_000 }],
        },
      ]);
      const result = await simulate(options);
      if (!result.ok) expect.fail(formatReport(options, result));
      // +3 s was missed before the pause: the misfired event says so (from +3 s; run-once replays
      // +9 s), the span does not.
      const last = misfire === 'skip' ? 9 : 8;
      const skipped = result.trace.filter((l) => /misfired +tick@\S+ skipped/.test(l));
      expect(skipped, misfire).toHaveLength(1);
      expect(skipped[0], misfire).toContain(`tick@+${last}.000s skipped ${last - 2} fire times`);
      expect(pausedSpans(result.trace), misfire).toEqual([{ stream: 'tick', first: 4, last }]);
    }
  });
});
