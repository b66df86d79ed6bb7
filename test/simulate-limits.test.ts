/**
 * Fleet limits (issue 32 item 7) in the deterministic simulator. Without faults but latency, a
 * job with `maxConcurrency: 2` (its own trigger every second and four stored schedules every
 * 4 s, runs of 0.2–0.8 s) never has three runs at once, and a job with `rateLimit: { max: 3, per: '1s' }`
 * never starts four within 750 ms (starts are counted at their grants on the store's clock; a
 * handler starts up to two round trips after its grant, and the simulated network takes up to
 * 60 ms a way — a limiter letting through twice the rate would show four all the same); under the usual fault mix (lost replies and requests,
 * partitions, crashes, drift, stalls) the checker finds no second run of an occurrence, no lost
 * fire time and no unjustified skip with the limits in play (the limits themselves may then be
 * exceeded by a dead node's permits lapsing and by nodes cut off past their lease, as documented
 * in docs/limits.md; with lost replies alone they hold: simulate-limits-replies.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { atOnce } from './fixtures/at-once.js';
import { densest } from './fixtures/densest.js';
import { SIM_FAULTS } from './fixtures/sim-faults.js';

/** `retrying`: `paced` retries a failed attempt, and p1's first attempts fail. */
function fleet(retrying = false): {
  options: Omit<SimulateOptions, 'seed'>;
  most: () => number;
  densest: () => number;
} {
  const capped = atOnce();
  const starts: number[] = [];
  const options: Omit<SimulateOptions, 'seed'> = {
    nodes: 3,
    durationMs: 30_000,
    jobs: [
      {
        name: 'capped',
        options: {
          every: '1s',
          lockAtMostFor: '3s',
          overlap: 'allow',
          maxConcurrency: 2,
          misfireThreshold: '10s',
        },
        // Two a second on average, each of 0.2–0.8 s: under what two at once can do, in bursts.
        schedules: Array.from({ length: 4 }, (_, i) => ({ id: `c${i}`, every: '4s' })),
        handler: (ctx, sim) => capped.run(() => sim.sleep(200 + Math.floor(sim.random() * 600), ctx.signal)),
      },
      {
        // One at a time, every second, runs up to 1.5 s: most fire times wait or misfire.
        name: 'single',
        options: { every: '1s', lockAtMostFor: '3s', maxConcurrency: 1 },
        runMs: [100, 1_500],
      },
      {
        name: 'paced',
        options: {
          lockAtMostFor: '3s',
          rateLimit: { max: 3, per: '1s' },
          misfireThreshold: '10s',
          ...(retrying && { retries: 1, retryDelay: '100ms' }),
        },
        // Four due together every 2 s: three start, the fourth a second later.
        schedules: Array.from({ length: 4 }, (_, i) => ({ id: `p${i}`, every: '2s' })),
        handler: async (ctx, sim) => {
          starts.push(sim.now());
          if (retrying && ctx.scheduleId === 'p1' && ctx.attempt === 1)
            throw new Error('first attempts fail');
        },
      },
    ],
  };
  return {
    options,
    most: capped.most,
    densest: () => densest(starts, 750),
  };
}

describe('simulate: fleet limits', () => {
  it('without faults: never more than maxConcurrency at once, never more than rateLimit.max starts within a window', async () => {
    for (const seed of [1, 2]) {
      const f = fleet();
      const result = await simulate({ ...f.options, seed });
      if (!result.ok) expect.fail(formatReport({ ...f.options, seed }, result));
      expect(f.most(), `seed ${seed}`).toBe(2);
      expect(f.densest(), `seed ${seed}`).toBe(3);
      expect(result.stats.runs).toBeGreaterThan(40);
    }
  });

  it('under faults: every occurrence once, none lost, every skip justified', async () => {
    // Seed 17 lost two fire times while a crashed node held the permit and their claims
    // (misfire.ts, heldElsewhere); seed 43 lost a replay to a failed high-water write (misfire.ts).
    // Faults stop 25 s before the end: what waited for permits through them is worked off at the
    // limits' pace. Open: of seeds 1–120, seed 27 loses one fire time of `single` (a gate lease
    // granted with its reply lost, then a replay that never ran); earlier builds stopped `single`
    // for good there (a reservation left unsettled, due.ts).
    for (const seed of [1, 2, 17, 43, 60]) {
      const f = fleet();
      const options = { ...f.options, durationMs: 40_000, settleMs: 25_000, faults: SIM_FAULTS };
      const result = await simulate({ ...options, seed });
      if (!result.ok) expect.fail(formatReport({ ...options, seed }, result));
    }
  }, 60_000);

  it('under faults, with retries: a run whose retry succeeded has ended, and no later fire time is skipped for it', async () => {
    // A page's run whose first attempt failed and whose retry succeeded, its page's finish cut
    // off (a partition): the next fire time's judge (claim/prev-run.ts) read the history of the
    // page's attempt only, took the failure (`willRetry`) for a run still going, and skipped the
    // fire time naming a run that had ended seconds before it — seeds 222, 238 and 306 of
    // 121-400 (27, 95 and 112 of 1-120 before rate-limited starts waited in line).
    for (const seed of [222, 238, 306]) {
      const f = fleet(true);
      const options = { ...f.options, durationMs: 40_000, settleMs: 25_000, faults: SIM_FAULTS };
      const result = await simulate({ ...options, seed });
      if (!result.ok) expect.fail(formatReport({ ...options, seed }, result));
    }
  }, 60_000);
});
