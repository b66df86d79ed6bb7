/**
 * Jittered stored schedules in the deterministic simulator (oncely/testing): their fire times come
 * due one by one and are claimed ahead of their starts (due/due-entry.ts CLAIM_AHEAD_MS), in pages
 * whose runs wait on the node for their own starts (run/page-starts.ts) — under crashes,
 * partitions, lost messages, drift and late timers. The checker judges every fire time: each ran
 * once or is on record with its reason, and an overlap skip names a run that was going.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimJob, type SimulateOptions, simulate } from '../src/testing/index.js';
import { SIM_FAULTS } from './fixtures/sim-faults.js';

/** 60 schedules every 4 s with up to 3 s of jitter: half per schedule, half per fire time. */
const jittered = (overlap: 'skip' | 'allow'): SimJob => ({
  name: `jit-${overlap}`,
  options: { lockAtMostFor: '2s', overlap },
  runMs: [20, 800],
  schedules: Array.from({ length: 60 }, (_, i) => ({
    id: `j-${i}`,
    every: '4s',
    jitter: i % 2 === 1 ? '3s' : { max: '3s', per: 'fire' as const },
  })),
});

async function sweep(options: Omit<SimulateOptions, 'seed'>, seeds: number[]) {
  let moves = 0;
  let claims = 0;
  for (const seed of seeds) {
    const result = await simulate({ ...options, seed });
    if (!result.ok) expect.fail(formatReport({ ...options, seed }, result));
    moves += result.stats.pageMoves;
    claims += result.stats.pageClaims;
  }
  return { movesPerClaim: moves / claims };
}

describe('simulate jittered stored schedules (claimed ahead of their starts)', () => {
  it('overlap skip: every fire time ran once or is on record, over the fault mix', async () => {
    // Seeds 206 and 334 recorded skips naming a run its node had given up (its page's lease
    // lost) while a takeover that had not written its start held that lease (claim/prev-run.ts).
    const seeds = [1, 2, 3, 4, 5, 206, 334];
    const { movesPerClaim } = await sweep(
      {
        nodes: 3,
        jobs: [jittered('skip')],
        durationMs: 30_000,
        faults: SIM_FAULTS,
        scheduler: { concurrency: 64 },
      },
      seeds,
    );
    // Spread over 3 s, 5 fire times a second per node: claimed ahead, several to a page.
    expect(movesPerClaim).toBeGreaterThan(2);
  }, 120_000);

  it('overlap allow: every fire time ran once, over the fault mix', async () => {
    await sweep(
      {
        nodes: 3,
        jobs: [jittered('allow')],
        durationMs: 30_000,
        faults: SIM_FAULTS,
        scheduler: { concurrency: 64 },
      },
      [11, 12, 13, 14, 15, 16],
    );
  }, 120_000);
});
