/**
 * A fire time said skipped as missed never runs, and a sharded fire time never runs some shards
 * while the others are said skipped (the simulator's `ran-and-skipped`, checker-misfires.ts). Before,
 * "missed" was one node's look at the claims, not ordered against a claim that came after it:
 *
 * - Job triggers (due/skip-fence.ts): a node looked, found fire time F unclaimed, and said it
 *   skipped; a replay of F another node had decided on, waiting for a fleet permit, or an on-time
 *   claim that reached the store late, then ran it. `jrl` (four shards under a rate limit, busy
 *   faults, seed 1): `+14 s` replayed by n1 after n3 had said `+13..+14 s` skipped. Now the skip
 *   claims what it skips first, and the later claim is refused (or the skip is).
 * - Sharded stored schedules (claim/partly-claimed.ts): a replay won shards 0 and 1 of F and lost
 *   shard 0 unstarted (its look at the entry failed twice, its lease lapsed) while shard 1 ran; a
 *   node then settled F from shard 0 as missed (`shs`, busy, seed 2: `shs/s1@+6 s`, shard 0 never
 *   ran). Now a settle of a fire time with a shard claimed gives shard 0 back, and F's other
 *   shards run. And a shard of a replay, or one planned on time and granted seconds late, ran
 *   after another node had settled F (seed 10: `shs/s1@+10 s#1`; seed 12: `shs/s0@+4 s#1`): a
 *   late shard whose shard 0 is held and not on record is given back — and watched while shard
 *   0 is undecided, so that it runs if F does (seed 3: dropped, `shs/s0@+4 s#1` never ran).
 *
 * Sweeps with the new check (2026-12-07): `jit,sh,shs,pq` busy 74 of 100 failing → 0 of 300;
 * `jqa,jrep,jrl` busy 93 of 100 → 0 of 200; `m5pages,tick,m5lim,m5q` mix5 97 of 100 → 0 of 800 of
 * this kind (docs/simulator.md, finding 38).
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { BUSY_RUN, MIX5_RUN } from './fixtures/sim-faults.js';
import {
  JIT,
  JITTERED_QUEUE_ALL,
  JITTERED_RATE,
  JITTERED_REPLACE,
  MIX5_JOBS,
  QUEUED,
  SHARDED,
  SHARDED_STORED,
} from './fixtures/sim-jobs.js';

const BUSY = { ...BUSY_RUN, jobs: [JIT, SHARDED, SHARDED_STORED, QUEUED] };
const JRL = { ...BUSY_RUN, jobs: [JITTERED_QUEUE_ALL, JITTERED_REPLACE, JITTERED_RATE] };
const M5 = { ...MIX5_RUN, jobs: MIX5_JOBS };

describe('a fire time said skipped as missed does not run (simulator)', () => {
  it.each([
    ['a sharded trigger under a rate limit, busy', 1, JRL],
    ['a sharded trigger under maxConcurrency, mix5', 2, M5],
    ['a sharded stored schedule whose shard 0 was lost unstarted, busy', 2, BUSY],
    ['a shard of a replay claimed after the settle, busy', 10, BUSY],
    ['an on-time shard granted seconds late, after the settle, busy', 12, BUSY],
    ['a shard given back while its shard 0 was undecided, run once it ran, busy', 3, BUSY],
  ] as const)('%s (seed %i): every fire time ran or was skipped, never both', async (_, seed, mix) => {
    const options: SimulateOptions = { ...mix, seed };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
  });

  it('a job of 200 shards skipping nine fire times after a pause: the skip holds the latest that fit one write, none runs', async () => {
    // All nine held were 1,800 ops in one write: refused (at most MAX_BATCH), retried until the
    // claims lapsed, and every one was recovered — 408 runs of shards said skipped.
    const options: SimulateOptions = {
      seed: 1,
      nodes: 3,
      durationMs: 30_000,
      faults: { latencyMs: [1, 20] },
      scheduler: { concurrency: 400 },
      jobs: [
        {
          name: 'wide',
          options: { every: '1s', shards: 200, misfire: 'skip', lockAtMostFor: '3s', overlap: 'allow' },
          runMs: [5, 50],
          pauses: [{ at: 8_000, resumeAt: 18_000 }],
        },
      ],
    };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
    expect(result.trace.some((l) => /misfired wide@\+17\.000s skipped 9 fire times/.test(l))).toBe(true);
  });
});
