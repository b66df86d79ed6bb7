/**
 * A job trigger's high-water mark is the fleet's record of which fire times were handled (run or
 * settled). Before the first of them was, there was none, and a node started then took every
 * fire time before its own start for the past ("a brand-new job does not backfill"), although
 * the job had run on other nodes for seconds. Seed 194 of the mix below: the nodes started at
 * 0.2-0.5 s, one of them at 2.7 s (its first start failed); `m5lim@+2 s` (4 shards under
 * `maxConcurrency: 2`) was missed, and n2 queued its replay but had no permit to claim it; the late
 * node claimed `+3 s` on time, raising the mark past `+2 s`; n2 crashed with the replay in its
 * memory, and every node after it passed `+2 s` under the mark — no node ran or recorded it. The
 * first node to find no mark now writes one at its start (due/due.ts, `initialCursor`), so the
 * late node handled `+2 s` as missed like the others.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { MIX5_RUN } from './fixtures/sim-faults.js';
import { MIX5_JOBS } from './fixtures/sim-jobs.js';

describe('the first high-water mark of a job trigger (simulator, four nodes)', () => {
  it('seed 194: a node started after the first fire times handles them as missed, not as the past', async () => {
    const options: SimulateOptions = { seed: 194, ...MIX5_RUN, jobs: MIX5_JOBS };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
  });
});
