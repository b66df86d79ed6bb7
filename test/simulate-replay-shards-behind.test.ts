/**
 * A sharded trigger's catch-up replay whose winner died with shards won and unstarted, found by a
 * node that came back behind the high-water mark more than half a done hold after that fire time.
 * `shp` (3 shards every 1 s, paused 8-13 s): no paused span was written (its node crashed), so the
 * pause's fire times were replayed after the resume; one node won all three shards of `+9 s`,
 * started shard 1 and crashed. Shard 1 was recovered from its in-flight record; shards 0 and 2 had
 * no record and their leases had lapsed when a node behind the mark looked at `+9 s` — which it
 * did at shard 0 alone, the fire time being past half a done hold (a shard not held could then
 * have run long ago), and shard 0 alone told it nothing. Now the latest fire times below the mark
 * are looked at whole, and a shard neither held nor on record (pending, in flight, in history) of
 * a fire time that was claimed is queued to run (due/misfire.ts, `belowMark`).
 *
 * Seeds of `npm run sweep -- --jobs pages,rep,rl,ps,cu,shp,mc --faults sim`: over 1-400 of that
 * mix 4 failing before, 2 after (89 and 301: `cu`/`mc` chains); `lim,rl,mc,pages`, mix5, the busy
 * mixes and the slow-machine workload unchanged seed for seed.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { SIM_RUN } from './fixtures/sim-faults.js';
import { SIM2_JOBS } from './fixtures/sim-jobs.js';

describe('shards of a replay whose winner died, found behind the mark (simulator, sim faults)', () => {
  for (const seed of [175, 352]) {
    it(`seed ${seed}: every shard of the replayed fire times ran or is on record`, async () => {
      const options: SimulateOptions = {
        ...SIM_RUN,
        seed,
        jobs: SIM2_JOBS,
      };
      const result = await simulate(options);
      expect(result.violations, formatReport(options, result)).toEqual([]);
    });
  }
});
