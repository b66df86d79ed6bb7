/**
 * Stored schedules with a fresh jitter offset per fire time, under `queue-all`, half with
 * `maxRuns`, some replaced or removed (`sb`), beside a job trigger with exclusions (`jex`), on three
 * nodes under the fault mix: a run-once replay of a fire time missed by less than the largest
 * offset moved the schedule's due entry to that same fire time, and once it had run the schedule
 * ran nothing more (sweep of 2026-12-07: 200 of 200 seeds; due/due-entry.ts, `settled`;
 * docs/simulator.md, finding 32). test/scheduler-jitter-replay.test.ts shows the same on a store.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { SIM_RUN } from './fixtures/sim-faults.js';
import { JITTERED_EXCLUDED, STORED_BOUNDED } from './fixtures/sim-jobs.js';

describe('simulate: per-fire jittered stored schedules go on after a replay', () => {
  for (const seed of [1, 2])
    it(`seed ${seed}: every fire time once or on record`, async () => {
      const options: SimulateOptions = { seed, ...SIM_RUN, jobs: [JITTERED_EXCLUDED, STORED_BOUNDED] };
      const result = await simulate(options);
      expect(result.violations, formatReport(options, result)).toEqual([]);
    });
});
