/**
 * A recovery of a claim that never started, queued behind its gate (a pending record of source
 * `recover`), read back by two nodes: the one that took the record started the fire time and lost
 * its lease at once (an extend's reply lost); the other, from the same record read a poll earlier,
 * won the freed occurrence. It must run the next attempt — the first attempt started and is on
 * record `abandoned` — not attempt 1 again under a higher token, overwriting that record (sweep
 * `jit,jall,sh,shs,pq` busy, seed 101 of 200, 2026-12-07: `sh@+4 s#2`). The pending candidate is
 * `unstarted` again (control/requests.ts), so its claim looks what started meanwhile.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { BUSY_RUN } from './fixtures/sim-faults.js';
import { JALL, JIT, QUEUED, SHARDED, SHARDED_STORED } from './fixtures/sim-jobs.js';

describe('simulate: a queued recovery read back after another node started it', () => {
  it('runs the next attempt, not attempt 1 again (seed 101)', async () => {
    const options: SimulateOptions = {
      seed: 101,
      ...BUSY_RUN,
      jobs: [JIT, JALL, SHARDED, SHARDED_STORED, QUEUED],
    };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
    const starts = result.trace.filter((l) => / start +sh@\+4\.000s#2 /.test(l));
    expect(starts.some((l) => /attempt=2 /.test(l))).toBe(true);
  });
});
