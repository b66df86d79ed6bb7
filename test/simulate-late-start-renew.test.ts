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
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { MIX5_RUN } from './fixtures/sim-faults.js';
import { JALL, JIT, QUEUE_ALL, REUPSERTED, SHARDED_STORED } from './fixtures/sim-jobs.js';

describe('a run started late in its lease, then a lost extend and a freeze (simulator, mix5 faults)', () => {
  it('seed 131: no run of a gate beside another, every fire time ran or is on record', async () => {
    const options: SimulateOptions = {
      ...MIX5_RUN,
      seed: 131,
      jobs: [JIT, JALL, QUEUE_ALL, REUPSERTED, SHARDED_STORED],
    };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
  });
});
