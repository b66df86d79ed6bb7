/**
 * A sharded job trigger's replay is claimed a shard at a time as fleet permits and slots allow.
 * Its first shard, queued behind its overlap gate, gives up its occurrence lease (its pending
 * record holds it) and raises the job's high-water mark; the shards still to claim are only in
 * the replaying node's memory. Seed 194's sibling, seed 139 of the mix below: n4 replayed
 * `m5lim@+4 s` (4 shards, `maxConcurrency: 2`), got one permit, queued shard 0 behind its gate and
 * crashed with shards 1-3 unclaimed; a later node went past `+4 s` under the mark, found none of
 * its shards held and took it for skipped — shards 1-3 never ran nor were on record. A fire time
 * under the mark none of whose shards is held, but some shard of which is on record (queued, or
 * in history), now has its other shards completed (due/misfire.ts, `belowMark` and `onRecord`).
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { MIX5_RUN } from './fixtures/sim-faults.js';
import { MIX5_JOBS } from './fixtures/sim-jobs.js';

describe("a sharded replay's shards left unclaimed by a node that died (simulator, four nodes)", () => {
  it('seed 139: the shards of a fire time whose first shard is on record run', async () => {
    const options: SimulateOptions = { seed: 139, ...MIX5_RUN, jobs: MIX5_JOBS };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
  });
});
