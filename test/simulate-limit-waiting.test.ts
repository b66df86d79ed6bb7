/**
 * A job with a fleet limit (maxConcurrency 3) among others on a busy fleet: a node keeps its read
 * entries of a limited job that wait for permits, and its reads pass over that job's other entries
 * (due-index.ts). When the permits went to the other nodes for long, the entries it kept had been
 * moved on by others meanwhile, and the job's entries moved since — of this node's share, which no
 * other live node reads — were read by nobody: a schedule lost every fire time after +4 s (seed 55:
 * `lim/l4@+6 s … +14 s`; the node kept `l5@+4 s` and `l6@+4 s` from 13.5 s to the end). A job with
 * an entry kept for two polls and a second is now read afresh. Fails before the fix.
 *
 * Judged by the simulator's checker: every fire time ran once or is on record with a reason that
 * holds, and the fleet never exceeds the limits.
 */
import { expect, it } from 'vitest';
import { formatReport, type SimJob, type SimulateOptions, simulate } from '../src/testing/index.js';
import { BUSY_RUN } from './fixtures/sim-faults.js';
import { LIMITED } from './fixtures/sim-jobs.js';

const jobs: SimJob[] = [
  {
    name: 'rep',
    options: { lockAtMostFor: '3s', overlap: 'replace' },
    runMs: [200, 2500],
    // A replaced run ends with its signal: not a run that must succeed (failRate > 0).
    failRate: 0.001,
    schedules: Array.from({ length: 6 }, (_, i) => ({ id: `r${i}`, every: '1s' })),
  },
  LIMITED,
  {
    name: 'rl',
    options: { lockAtMostFor: '3s', rateLimit: { max: 5, per: '1s' } },
    runMs: [50, 800],
    schedules: Array.from({ length: 6 }, (_, i) => ({ id: `rl${i}`, every: '2s' })),
  },
  {
    name: 'ps',
    options: { lockAtMostFor: '3s' },
    runMs: [50, 1500],
    schedules: Array.from({ length: 8 }, (_, i) => ({ id: `p${i}`, every: '1s', jitter: '400ms' })),
    pauses: [
      { scheduleId: 'p1', at: 6_000, resumeAt: 11_000 },
      { at: 8_000, resumeAt: 12_000 },
    ],
  },
];

it('a node reads a limited job afresh when the entries it keeps for permits wait too long (simulator, seed 55)', async () => {
  const options: SimulateOptions = { seed: 55, ...BUSY_RUN, jobs };
  const result = await simulate(options);
  expect(result.violations, formatReport(options, result)).toEqual([]);
});
