/**
 * Fleet limits (docs/limits.md) when store replies and requests are lost — no crash, no partition,
 * so no documented edge applies: `maxConcurrency: 2` never has three runs at once, and
 * `rateLimit: { max: 3, per: '1s' }` never starts four within 750 ms (a start counts at its grant;
 * a handler begins up to two round trips after it). Each seed below broke one of them before the
 * fix it names (simulator sweep of 60 seeds, 2026-12-03):
 *
 * - a claim whose acquire got no answer gave its permit back with its reservation, and was then
 *   adopted and started on top of the runs granted since (claim/unanswered.ts keeps it:
 *   FleetLimits.keep) — seeds 5, 30 (3 and 4 runs at once);
 * - a page whose claim lost its answer was taken over after its lease and its runs started without
 *   a permit (recover/page-recovery.ts now reserves first) — seeds 2, 16 (4 starts in 750 ms);
 * - a tick's rate grant waited a second for the tick's other reservation (a lost request) and was
 *   used after the window had moved on under another node's grant (FleetLimits.stale) — seeds 3, 4
 *   (5 and 4 starts in 750 ms).
 * - with `capped` sharded: a stored schedule's shard item offered again for recovery (claimed and
 *   never started) was claimed without a reservation (due/due.ts: the recoveries are now taken
 *   per job, a limited job's within its grant) — seed 49 (3 runs at once);
 * - a page whose start record had to be written again (a lost request) started its runs a second
 *   after their grant, which had counted them: such a late start asks for a start in the window
 *   again (FleetLimits.rateStart) — seed 59 (4 starts in 750 ms).
 *
 * And with nothing lost at all (latency and stalls): a new job's first limit record created twice
 * (FleetLimits, CREATE_LEASE_MS) — seeds 65, 237 (3 and 4 runs at once).
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { atOnce } from './fixtures/at-once.js';
import { densest } from './fixtures/densest.js';

/** `sharded`: `capped` has 2 shards and runs of 50-250 ms (the same load on the limit). */
function fleet(seed: number, sharded = false) {
  const capped = atOnce();
  const starts: number[] = [];
  const options: SimulateOptions = {
    seed,
    nodes: 3,
    durationMs: 40_000,
    settleMs: 25_000,
    faults: { latencyMs: [2, 60], lostReplyRate: 0.03, lostRequestRate: 0.02 },
    jobs: [
      {
        name: 'capped',
        options: {
          every: '1s',
          lockAtMostFor: '3s',
          overlap: 'allow',
          maxConcurrency: 2,
          misfireThreshold: '10s',
          ...(sharded && { shards: 2 }),
        },
        schedules: Array.from({ length: 4 }, (_, i) => ({ id: `c${i}`, every: '4s' })),
        handler: (ctx, sim) =>
          capped.run(() => {
            const ms = sharded ? 50 + Math.floor(sim.random() * 200) : 200 + Math.floor(sim.random() * 600);
            return sim.sleep(ms, ctx.signal);
          }),
      },
      {
        name: 'paced',
        options: { lockAtMostFor: '3s', rateLimit: { max: 3, per: '1s' }, misfireThreshold: '10s' },
        schedules: Array.from({ length: 4 }, (_, i) => ({ id: `p${i}`, every: '2s' })),
        handler: async (_ctx, sim) => {
          starts.push(sim.now());
        },
      },
    ],
  };
  return { options, most: capped.most, densest: () => densest(starts, 750) };
}

describe('simulate: fleet limits with lost replies and requests', () => {
  for (const [fix, seeds] of [
    ['an unanswered claim keeps its permit', [5, 30]],
    ['a page recovery waits for permits', [2, 16]],
    ['a stale rate grant is not used', [3, 4]],
    ['a start long after its claim asks for a start again', [59]],
    ['sharded: a stored schedule shard item recovered waits for a permit', [49]],
  ] as const)
    it(`${fix} (seeds ${seeds.join(', ')})`, async () => {
      for (const seed of seeds) {
        const f = fleet(seed, fix.startsWith('sharded'));
        const result = await simulate(f.options);
        if (!result.ok) expect.fail(formatReport(f.options, result));
        expect(f.most(), `seed ${seed}: runs of capped at once`).toBeLessThanOrEqual(2);
        expect(f.densest(), `seed ${seed}: starts of paced within 750 ms`).toBeLessThanOrEqual(3);
      }
    });
});

describe("simulate: a new job's first limit record", () => {
  it('three nodes reserving at once, slow store calls and stalled timers: never three runs at once (seeds 65, 237)', async () => {
    // The CI test's shape (test/harness/limits-suite.ts): a sharded job's own trigger and 8 stored
    // one-shots, all due at one instant, maxConcurrency 2, three nodes. With nothing lost, only
    // latency and stalls, its first record was created twice and a permit count overwritten:
    // seed 237 ran 4 at once, seed 65 three (fleet-limits.ts, CREATE_LEASE_MS).
    for (const [seed, latency, stallRate] of [
      [65, 300, 0.2],
      [237, 100, 0.05],
    ] as const) {
      const start = 1.9e12 + 4_000;
      const first = atOnce();
      const options: SimulateOptions = {
        seed,
        nodes: 3,
        durationMs: 60_000,
        settleMs: 50_000,
        faults: { latencyMs: [1, latency], stallRate, stallMs: 800 },
        scheduler: { pollInterval: '100ms' },
        jobs: [
          {
            name: 'first',
            options: {
              every: '1s',
              startAt: new Date(start),
              endAt: new Date(start + 1_200),
              shards: 2,
              maxConcurrency: 2,
              misfireThreshold: '30s',
            },
            schedules: Array.from({ length: 8 }, (_, i) => ({ id: `s${i}`, at: start })),
            handler: (_ctx, sim) => first.run(() => sim.sleep(60)),
          },
        ],
      };
      const result = await simulate(options);
      if (!result.ok) expect.fail(formatReport(options, result));
      expect(first.runs(), `seed ${seed}: runs`).toBe(20);
      expect(first.most(), `seed ${seed}: runs at once`).toBe(2);
    }
  });
});

describe('simulate: rateLimit and retries', () => {
  it('a retry is a start: it waits for the window like a first attempt', async () => {
    // Four schedules every 2 s, at most 2 starts per second; each first attempt fails and is
    // retried after 100 ms. Before, retries started outside the window: 4 starts within 750 ms.
    // Twice the starts the limit allows are asked for: a rate-only job starts first come, first
    // served (fleet-limits.ts `waitsFrom`), and a retry waiting for the window can starve until
    // its gate's next fire time is lost — 7 of the first 40 seeds before the invoked mark
    // (run/invoked-mark.ts), 6 after, seed 1 among them now (open: issue 32's "started in
    // fire-time order" is not met for rate-only jobs). Seed 2 keeps every guarantee either way.
    const starts: number[] = [];
    const options: SimulateOptions = {
      seed: 2,
      nodes: 3,
      durationMs: 20_000,
      faults: { latencyMs: [2, 30] },
      jobs: [
        {
          name: 'paced',
          options: {
            lockAtMostFor: '3s',
            rateLimit: { max: 2, per: '1s' },
            retries: 1,
            retryDelay: '100ms',
            misfireThreshold: '30s',
          },
          schedules: Array.from({ length: 4 }, (_, i) => ({ id: `p${i}`, every: '2s' })),
          handler: async (ctx, sim) => {
            starts.push(sim.now());
            if (ctx.attempt === 1) throw new Error('first attempts fail');
          },
        },
      ],
    };
    const result = await simulate(options);
    if (!result.ok) expect.fail(formatReport(options, result));
    expect(starts.length).toBeGreaterThan(20);
    expect(densest(starts, 750)).toBeLessThanOrEqual(2);
  });
});
