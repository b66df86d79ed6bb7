/**
 * A page taken over whose run had in fact ended: the run finished while its node was cut off from
 * the store, its lease lapsed, another node took the page over and read no outcome on record; the
 * outcome was stored (after the lease, the at-least-once case) before that takeover's start write
 * landed (its first try lost). The next fire time's claim judged the page by the record it read —
 * still the old holder's, whose run had ended on record — and started; the takeover then ran the
 * earlier fire time again beside it (simulator, partitions and lost requests, seed 43 of a mix of
 * jittered, sharded and queued schedules: jit/j12@+2 s's recovery started 0.35 s after +4 s's run,
 * a gate overlap). A fire time now waits while a takeover holds the page before it and has not
 * written its start (claim/prev-run.ts). Fails before the fix.
 *
 * Judged by the simulator's checker: every fire time ran once or is on record with a reason that
 * holds, and no two runs of a gate at once.
 */
import { expect, it } from 'vitest';
import { formatReport, type SimJob, type SimulateOptions, simulate } from '../src/testing/index.js';
import { BUSY_RUN, SIM_FAULTS } from './fixtures/sim-faults.js';
import { JIT, QUEUED, SHARDED, SHARDED_STORED } from './fixtures/sim-jobs.js';

const jobs: SimJob[] = [JIT, SHARDED, SHARDED_STORED, QUEUED];

it('a fire time waits while a takeover of the page before it has not written its start (simulator, seed 43)', async () => {
  const options: SimulateOptions = { seed: 43, ...BUSY_RUN, faults: SIM_FAULTS, jobs };
  const result = await simulate(options);
  expect(result.violations, formatReport(options, result)).toEqual([]);
});
