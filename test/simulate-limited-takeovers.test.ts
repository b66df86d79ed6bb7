/**
 * A limited job trigger keeps up when it can: 4 shards a second under `maxConcurrency: 2`, runs of
 * 100-600 ms (1.4 runs at once of demand), on 4 nodes without faults. Every node queues every shard
 * of each fire time; past the grace each node asked the fleet for permits for the other nodes'
 * shards too, won some, and only at the claim found them run elsewhere and gave the permits back,
 * while its place in line held them from work that could use them: the job fell ~3 s behind and its
 * late fire times were judged by its misfire policy (seeds 1-3: starts 3.1 s late on average, 289
 * of 348 shards run, the rest skipped as missed). Now a node looks up such takeovers in the
 * background and drops those on record before it asks for permits (due/limited-takeovers.ts):
 * 1.9 s, 318 run. What is left is the permits' hand-over between nodes (docs/limits.md): on one
 * node the same job keeps up.
 */
import { expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';

it('a saturated sharded trigger under maxConcurrency falls behind by less than 2.5 s on average (seeds 1-3)', async () => {
  const late: number[] = [];
  let runs = 0;
  for (const seed of [1, 2, 3]) {
    const options: SimulateOptions = {
      seed,
      nodes: 4,
      durationMs: 30_000,
      settleMs: 12_000,
      faults: {},
      scheduler: { pollInterval: '300ms', concurrency: 12 },
      jobs: [
        {
          name: 'capped',
          options: { every: '1s', lockAtMostFor: '3s', shards: 4, maxConcurrency: 2 },
          handler: async (ctx, sim) => {
            runs++;
            late.push(sim.now() - (ctx.fireTime.getTime() - 1.9e12));
            await sim.sleep(100 + sim.random() * 500, ctx.signal);
          },
        },
      ],
    };
    const result = await simulate(options);
    if (!result.ok) expect.fail(formatReport(options, result));
  }
  const mean = late.reduce((a, b) => a + b, 0) / late.length;
  // Generous: 1.9 s and 318 of the 348 shards run now; 3.1 s and 289 before.
  expect(mean, `mean lateness of ${runs} runs, ms`).toBeLessThan(2_500);
  expect(runs, 'shards run of 3 x 29 x 4').toBeGreaterThanOrEqual(300);
}, 60_000);
