/**
 * One acquire asks for an occurrence's overlap gate with the first claim of that occurrence only.
 * A poll can offer one fire time twice (its queued run, read from the pending record, and a
 * backfill of its fire time); the store grants a key repeated in one acquire to its first request
 * only. The gate went with the second request, which lost the occurrence and gave the gate back;
 * the first won the occurrence, asked for the gate after its win, found it still held (by its own
 * node's other claim) and waited — at every poll. Mix5, seed 15: `tick@+4 s` (catch-up, queued
 * before a pause and inside a backfill's range) waited from 8 s to 21 s, and +6..+8 s never ran
 * (`lost-fire-time`); seed 435 the same for +7 and +8 s.
 */
import { expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { MIX5_RUN } from './fixtures/sim-faults.js';
import { MIX5_JOBS } from './fixtures/sim-jobs.js';

it('a fire time offered twice in one acquire (queued and backfilled) gets its gate and runs (mix5, seeds 15, 435)', async () => {
  for (const seed of [15, 435]) {
    const options: SimulateOptions = { ...MIX5_RUN, jobs: MIX5_JOBS, seed };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
  }
}, 30_000);
