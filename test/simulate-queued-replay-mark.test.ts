/**
 * A replay queued behind its gate is claimed, though its occurrence is free and the high-water mark
 * may have been lowered below it. The mark is a plain put (claim/high-water.ts): a node that queued
 * an older replay a moment later wrote the older fire time over it. A node whose misfire scan then
 * met the queued fire time took it for missed and unclaimed, and settled it in the pause's
 * `paused` span while it waited — and the older replay, which it had superseded, was on record
 * "superseded by" a fire time that never ran (sweep `jqa,jrep,jrl` under mix5, seed 155 of 200,
 * 2026-12-07: `jrl@+10 s#0`, `+11 s#0`, a job paused 9-12 s). The scan now counts a fire time with
 * a pending record as claimed (due/misfire.ts `unclaimed`), and completes a sharded one's other
 * shards as it does below the mark.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { MIX5_RUN } from './fixtures/sim-faults.js';
import { JITTERED_QUEUE_ALL, JITTERED_RATE, JITTERED_REPLACE } from './fixtures/sim-jobs.js';

describe('simulate: a queued replay under a lowered high-water mark', () => {
  it('is not settled as missed while it waits, and what it superseded stays justified (seed 155)', async () => {
    const options: SimulateOptions = {
      seed: 155,
      ...MIX5_RUN,
      jobs: [JITTERED_QUEUE_ALL, JITTERED_REPLACE, JITTERED_RATE],
    };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
  });
});
