/**
 * Job triggers claimed ahead of their fire time (src/scheduler/due/claim-lead.ts) under the
 * simulator's faults: lost requests and replies, partitions, crashes, clock drift and skew, late
 * timers. A job whose runs end close to the next fire time (its gate often held when the claim
 * ahead is made, and free again by the fire time), a jittered job, and a job with overlap
 * `allow`: the checker finds no run started before its fire time, no skip without a run that had
 * started before it and was going, no lost fire time, no two runs of one gate at once.
 */
import { expect, it } from 'vitest';
import { explore, type SimJob } from '../src/testing/index.js';
import { SIM_FAULTS } from './fixtures/sim-faults.js';

const jobs: SimJob[] = [
  { name: 'tight', options: { every: '1s', lockAtMostFor: '3s', overlap: 'skip' }, runMs: [700, 1000] },
  { name: 'jit', options: { every: '2s', lockAtMostFor: '3s', jitter: '1s' }, runMs: [100, 1900] },
  { name: 'free', options: { every: '1s', lockAtMostFor: '3s', overlap: 'allow' }, runMs: [50, 1500] },
];

it('claims ahead keep every guarantee over 40 seeds of faults', async () => {
  const result = await explore({
    seeds: 40,
    nodes: 3,
    jobs,
    durationMs: 30_000,
    faults: SIM_FAULTS,
    log: false,
  });
  expect(result.failure?.report).toBeUndefined();
  expect(result.seedsRun).toBe(40);
}, 120_000);
