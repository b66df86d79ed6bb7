/**
 * Fleet limits hand permits out oldest work first across nodes, not to whichever node asks first
 * (issue 32: "what waits is started in fire-time order as permits free up"). Seed 19 of the mix
 * below: `m5lim` (4 shards a second under `maxConcurrency: 2`, saturated after a crash and a
 * partition). Before, n3 claimed three shards of its `+17 s` replay and waited for a permit for
 * the fourth from 21 s to the end, while the nodes whose runs ended asked again first and took
 * every permit that freed for their newer fire times (`+22 s`, `+23 s`): `m5lim@+17 s#3` never ran.
 * Now a node whose work waits more than a second holds a place in line in the job's limit record
 * (run/limit-record.ts, run/limit-place.ts) and newer work elsewhere yields to it: the replays run
 * oldest first (`+4 s`, `+11 s`, `+14 s`, then `+19 s`/`+20 s` within the second of slack), and
 * n3's `+17 s`, decided but not yet claimed, is settled by a later node's misfire decision.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { MIX5_RUN } from './fixtures/sim-faults.js';
import { MIX5_JOBS } from './fixtures/sim-jobs.js';

describe('fleet limits in start-time order (simulator, four nodes)', () => {
  it('seed 19: a shard waiting for a permit since 21 s is started before newer fire times of other nodes', async () => {
    const options: SimulateOptions = { seed: 19, ...MIX5_RUN, jobs: MIX5_JOBS };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
  });
});
