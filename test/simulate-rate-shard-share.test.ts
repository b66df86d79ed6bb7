/**
 * A limited job's own trigger asks its fleet permits only for the shards this node may claim now
 * (due/source-peek.ts), as a due entry does (due/entry-peek.ts). Before, every node reserved a
 * permit for each of the trigger's shards at every fire time, though it claims only its share at
 * first; the permits came back only after each tick's claims, later still when a node stalled.
 *
 * - `jrl` (four shards, `rateLimit: { max: 8, per: '1s' }`, three nodes, busy faults, seed 29 of
 *   `npm run sweep -- --jobs jqa,jrep,jrl --faults busy`): the window was full of such
 *   reservations while the job started one or two runs a second; its replays and backfilled fire
 *   times waited in line for seconds, and `jrl@+5 s#3` (backfilled) and `+15 s#3` never ran. Seed
 *   58 the same class (backfilled `+4 s#0`, `+5 s#0`).
 * - `m5lim` (four shards under `maxConcurrency: 2`, four nodes, mix5 faults, seed 89 of
 *   `--jobs m5pages,tick,m5lim,m5q --faults mix5`): `m5lim@+18 s#3` never ran.
 *
 * Sweeps (2026-12-07): `jqa,jrep,jrl` busy 1-400 4 failing → 3 (the saturated-gate tail: a shard's
 * backfilled fire times behind its replays); `m5pages,tick,m5lim,m5q` mix5 1-600 13 → 8.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { BUSY_RUN, MIX5_RUN } from './fixtures/sim-faults.js';
import { JITTERED_QUEUE_ALL, JITTERED_RATE, JITTERED_REPLACE, MIX5_JOBS } from './fixtures/sim-jobs.js';

const JRL = { ...BUSY_RUN, jobs: [JITTERED_QUEUE_ALL, JITTERED_REPLACE, JITTERED_RATE] };
const M5 = { ...MIX5_RUN, jobs: MIX5_JOBS };

describe('a limited sharded trigger reserves permits for its share only (simulator)', () => {
  it.each([
    ['jrl, busy', 29, JRL],
    ['jrl, busy', 58, JRL],
    ['m5lim, mix5', 89, M5],
  ] as const)('%s, seed %i: every fire time of every shard runs', async (_, seed, mix) => {
    const options: SimulateOptions = { ...mix, seed };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
  });
});
