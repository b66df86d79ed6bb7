/**
 * A due entry's misfire replay won from a stale read (claim/claim.ts, claim/entry-moved.ts): five
 * nodes, stored schedules in pages, a stored schedule sharded in three under overlap `queue`,
 * `queue-all`, `replace` and `run-once` jobs, lost replies and requests, stalls, drift, skew, two
 * partitions and two crashes. The simulator's checker: every fire time ran once or is on record
 * with a reason that holds (a superseded skip's chain included), one run per gate at a time.
 *
 * Seed 410: a node back from a crash adopted its replay of sq/a@+10 s (shard 0) after a lost
 * answer. Another node had queued +10 s and +11 s behind the gate meanwhile, moving the entry on
 * to +12 s; the replay's start batch moved it from +10 s to +11 s again (a delete and a put: the
 * put lands whatever the delete found). That node then settled the copy at +11 s as missed,
 * holding +11 s "done"; the +11 s queued behind the gate was dropped for it, and +7 s, superseded
 * by +11 s, was replaced by nothing. A due entry's replay now runs only if its entry is still
 * where its node read it; else it is given back.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';

function fiveNodes(seed: number): SimulateOptions {
  return {
    seed,
    nodes: 5,
    durationMs: 30_000,
    settleMs: 12_000,
    faults: {
      latencyMs: [1, 60],
      stallRate: 0.03,
      stallMs: 1000,
      clockDriftRate: 0.02,
      clockSkewMs: 200,
      lostReplyRate: 0.04,
      lostRequestRate: 0.02,
      partitions: 2,
      crashes: 2,
    },
    scheduler: { pollInterval: '250ms', concurrency: 20 },
    jobs: [
      {
        name: 'pages',
        options: { lockAtMostFor: '3s' },
        runMs: [20, 400],
        schedules: Array.from({ length: 24 }, (_, i) => ({ id: `p${i}`, every: i % 3 ? '2s' : '1s' })),
      },
      {
        name: 'sq',
        options: { lockAtMostFor: '3s', overlap: 'queue', shards: 3 },
        runMs: [50, 1500],
        schedules: [
          { id: 'a', every: '1s' },
          { id: 'b', every: '2s' },
        ],
      },
      { name: 'all', options: { every: '2s', lockAtMostFor: '3s', overlap: 'queue-all' }, runMs: [20, 2500] },
      {
        name: 'rep',
        options: { every: '1s', lockAtMostFor: '3s', overlap: 'replace' },
        // Ends on its signal: a newer fire time replaces it.
        handler: async (ctx, sim) => {
          await sim.sleep(200 + Math.floor(sim.random() * 1600), ctx.signal);
          if (ctx.signal.aborted) throw ctx.signal.reason;
        },
      },
      { name: 'once', options: { every: '1s', lockAtMostFor: '3s', misfire: 'run-once' }, runMs: [20, 900] },
    ],
  };
}

describe("a due entry's replay won from a stale read (simulator, five nodes)", () => {
  for (const seed of [410, 1, 2, 3]) {
    it(`seed ${seed}: every fire time once or on record, one run per gate at a time`, async () => {
      const options = fiveNodes(seed);
      const result = await simulate(options);
      expect(result.violations, formatReport(options, result)).toEqual([]);
    });
  }
});
