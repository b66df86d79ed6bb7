/**
 * A run that starts with little of its lease left renews it before its handler starts
 * (run/run.ts, KeepAlive.fresh), so a node frozen right after the start does not run on past
 * the lease beside the next holder of its gate. Seed 23 (busy faults: stalls of up to 800 ms,
 * lost requests and replies): a shard of `sh` was claimed at 13.96 s and, its node stalled, only
 * started at 16.52 s, 0.44 s before its lease's deadline; its renewal (due at once) went out beside
 * the handler, the node froze 0.7 s, and another node took the gate at 16.98 s and started the
 * next fire time while the first run went on (`gate-overlap`). test/simulate-late-start-renew.test.ts
 * and test/keep-alive-late-start.test.ts keep the earlier steps of this.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { BUSY_RUN } from './fixtures/sim-faults.js';
import { JALL, JIT, QUEUED, SHARDED, SHARDED_STORED } from './fixtures/sim-jobs.js';

describe('a run started late in its lease on a node that then freezes (simulator, busy faults)', () => {
  it('seed 23: no run of a gate beside another, every fire time ran or is on record', async () => {
    const options: SimulateOptions = {
      ...BUSY_RUN,
      seed: 23,
      jobs: [JIT, JALL, SHARDED, SHARDED_STORED, QUEUED],
    };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
  });
});
