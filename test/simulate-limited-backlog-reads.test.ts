/**
 * A limited job's backlog larger than what a read takes keeps moving at its limit. A read that
 * met entries of a limited job still waiting here for permits passes over the job's later
 * entries (due/due-scan.ts, skipJobs); once those waiting entries were claimed, nothing owed the
 * next read — they were due already, not ahead — so the passed-over ones waited for the safety
 * read, every 10 s (due/due-index.ts, passedOverFreed). 10,000 due under 2,000 starts a second on
 * four node processes took 54 s, started in bursts ten seconds apart
 * (test/limits-multiprocess.test.ts). Here 300 due at once on two nodes with 8 slots each:
 * under 20 starts a second, 140 of them had not started 58 s later (seed 1), and under
 * `maxConcurrency` 5 with 200 ms runs 236; now all start by 14.8 s and 12.9 s, the limit's pace.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';

describe("simulate: a limited job's backlog beyond a read", () => {
  for (const limit of ['rate', 'concurrency'] as const) {
    it(`300 one-shots under ${limit === 'rate' ? 'rateLimit 20/s' : 'maxConcurrency 5 (200 ms runs)'} start at the limit's pace, not in bursts a safety read apart (seeds 1, 2)`, async () => {
      for (const seed of [1, 2]) {
        const start = 1.9e12 + 2_000;
        const starts: number[] = [];
        const options: SimulateOptions = {
          seed,
          nodes: 2,
          durationMs: 60_000,
          faults: { latencyMs: [1, 10] },
          // Few slots: a read takes 8 entries at a time, the rest is passed over.
          scheduler: { pollInterval: '200ms', concurrency: 8 },
          jobs: [
            {
              name: 'mail',
              options: {
                lockAtMostFor: '5s',
                misfireThreshold: '10m',
                ...(limit === 'rate' ? { rateLimit: { max: 20, per: '1s' } } : { maxConcurrency: 5 }),
              },
              schedules: Array.from({ length: 300 }, (_, i) => ({ id: `m${i}`, at: start })),
              handler: async (_ctx, sim) => {
                starts.push(sim.now());
                await sim.sleep(limit === 'rate' ? 20 : 200);
              },
            },
          ],
        };
        const result = await simulate(options);
        if (!result.ok) expect.fail(formatReport(options, result));
        expect(starts.length, `seed ${seed}: starts`).toBe(300);
        const lastS = (Math.max(...starts) - 2_000) / 1000;
        // At the limit: 15 s (rate: 300 at 20 a second) or 12 s (5 at once, 200 ms each).
        expect(lastS, `seed ${seed}: last start, s after the fire time`).toBeLessThan(
          limit === 'rate' ? 20 : 18,
        );
      }
    }, 60_000);
  }
});
