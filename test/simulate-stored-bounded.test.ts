/**
 * Stored schedules under `queue-all` with a fresh jitter offset per fire time, half with
 * `maxRuns`, some replaced or removed (`sb`), beside a job trigger with exclusions (`jex`), on
 * three nodes under the fault mix (sweep of 2026-12-07 at 10c1330: `jex,sb` 1, 9 and 11 of 200
 * seeds failing under the sim, busy and mix5 faults; 0 of 200 after; docs/simulator.md,
 * findings 34 and 35).
 * - Seed 337: a node won a fire time that another node had queued behind its gate (a queue
 *   frees the occurrence) from a read of the due index older than that queue; its start moved
 *   the entry from that fire time on again, beside the live entry further on, with the count of
 *   remaining runs it had read: the schedule ran on two chains, 12 runs under maxRuns 10
 *   (claim/claim.ts, entry-moved.ts).
 * - Seed 20: a fire time won by a node that crashed before it queued it, its schedule removed
 *   inside that node's lease: the stale entry was deleted with nothing on record, and the fire
 *   time was never run nor recorded `removed` (control/removed-span.ts, `held`).
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { SIM_RUN } from './fixtures/sim-faults.js';
import { JITTERED_EXCLUDED, STORED_BOUNDED } from './fixtures/sim-jobs.js';

describe('simulate: bounded and removed stored schedules under queue-all', () => {
  for (const seed of [337, 20])
    it(`seed ${seed}: no run beyond maxRuns, every fire time once or on record`, async () => {
      const options: SimulateOptions = { seed, ...SIM_RUN, jobs: [JITTERED_EXCLUDED, STORED_BOUNDED] };
      const result = await simulate(options);
      expect(result.violations, formatReport(options, result)).toEqual([]);
    });
});
