/**
 * A stored schedule's misfire settle over a backfill's dead run: a backfill run of a fire time
 * started and its node crashed; the schedule's due entry (which a backfill run does not move) was
 * still at that fire time, came up missed, and its settle claimed the occurrence and held it
 * "done" for an hour — recovery passed the dead run over for the whole hold and it never finished
 * (simulator, busy faults, a queued jittered job with backfills beside sharded and paused ones,
 * seed 62: jbf/jb0@+4 s, `unfinished`). A settle that finds a dead run of its fire time frees the
 * occurrence for recovery instead (claim.ts). Fails before the fix.
 *
 * Judged by the simulator's checker: every fire time ran once or is on record with a reason that
 * holds, every run started finished (recover is on), and every backfill kept its promise.
 */
import { expect, it } from 'vitest';
import { formatReport, type SimJob, type SimulateOptions, simulate } from '../src/testing/index.js';
import { BUSY_RUN } from './fixtures/sim-faults.js';
import { QUEUED, SHARDED } from './fixtures/sim-jobs.js';

const jobs: SimJob[] = [
  {
    name: 'shp',
    options: { lockAtMostFor: '3s', shards: 2, misfire: 'catch-up' },
    runMs: [50, 900],
    schedules: Array.from({ length: 5 }, (_, i) => ({ id: `sp${i}`, every: '2s', jitter: '700ms' })),
    pauses: [
      { scheduleId: 'sp1', at: 5_000, resumeAt: 9_000 },
      { at: 10_000, resumeAt: 12_500 },
    ],
  },
  {
    name: 'jbf',
    options: { lockAtMostFor: '3s', overlap: 'queue' },
    runMs: [50, 900],
    schedules: Array.from({ length: 4 }, (_, i) => ({ id: `jb${i}`, every: '1s', jitter: '300ms' })),
    backfills: [
      { scheduleId: 'jb0', at: 7_000, from: 1_900_000_001_000, to: 1_900_000_006_000 },
      { scheduleId: 'jb2', at: 9_000, from: 1_900_000_002_000, to: 1_900_000_008_000 },
    ],
  },
  SHARDED,
  QUEUED,
];

it('a misfire settle frees a fire time whose backfill run died, for recovery (simulator, seed 62)', async () => {
  const options: SimulateOptions = { seed: 62, ...BUSY_RUN, jobs };
  const result = await simulate(options);
  expect(result.violations, formatReport(options, result)).toEqual([]);
});
