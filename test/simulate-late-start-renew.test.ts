/**
 * A run that starts with little of its lease left renews it at once (src/lock/keep-alive.ts), so
 * one lost extend and a freeze near the deadline do not leave it running past its lease beside the
 * next holder of its gate. Seed 131 (mix5 faults: lost requests and replies, stalls of up to
 * 900 ms): a shard of a replay started 0.8 s before its lease's deadline (its claim's in-flight
 * look had lost its request); its first renewal, due two safety margins before the deadline, was
 * lost; its node froze past the abort point, and another node took the gate and started the next
 * fire time 70 ms before the frozen run was told to stop (`gate-overlap`).
 *
 * `npm run sweep -- --jobs jit,jall,qa,churn,shs --faults mix5`: 1 of seeds 1-600 before, none
 * after; the standard mixes within their noise (mix5 1-900: 24 → 27 late fire times at the end
 * of the run, `pages,rep,rl,ps,cu,shp,mc` 1-400 1 → 1, slow machine 1-200 0 → 0).
 *
 * Seed 23 (busy faults: stalls of up to 800 ms, lost requests and replies): a shard of `sh` was
 * claimed at 13.96 s and, its node stalled, only started at 16.52 s, 0.44 s before its lease's
 * deadline; its renewal (due at once) went out beside the handler, the node froze 0.7 s, and
 * another node took the gate at 16.98 s and started the next fire time while the first run went
 * on (`gate-overlap`). Now such a run waits for that renewal's answer before its handler starts
 * (run/run.ts, KeepAlive.fresh; test/keep-alive-late-start.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { BUSY_RUN, MIX5_RUN } from './fixtures/sim-faults.js';
import { JALL, JIT, QUEUE_ALL, QUEUED, REUPSERTED, SHARDED, SHARDED_STORED } from './fixtures/sim-jobs.js';

const cases: { what: string; options: SimulateOptions }[] = [
  {
    what: 'seed 131 (mix5): a lost extend, then a freeze',
    options: { ...MIX5_RUN, seed: 131, jobs: [JIT, JALL, QUEUE_ALL, REUPSERTED, SHARDED_STORED] },
  },
  {
    what: 'seed 23 (busy): a freeze right after a start 0.44 s before the deadline',
    options: { ...BUSY_RUN, seed: 23, jobs: [JIT, JALL, SHARDED, SHARDED_STORED, QUEUED] },
  },
];

describe('a run started late in its lease on a node that then freezes (simulator)', () => {
  for (const { what, options } of cases)
    it(`${what}: no run of a gate beside another, every fire time ran or is on record`, async () => {
      const result = await simulate(options);
      expect(result.violations, formatReport(options, result)).toEqual([]);
    });
});
