/**
 * A job with fleet limits and a backlog does not hold back the fleet's other stored schedules:
 * 45 one-shots due at once under `rateLimit: 3 per second` (15 s of backlog), beside another job's
 * schedules every second with the default misfire threshold (1 s). Before, a node read the due
 * index again only once every entry it had read was offered, and the limited job's entries waited
 * for permits: for the whole backlog the other job's fire times were read only as they became
 * misfires (here up to 1.5 s late; with a 30 s threshold they ran 8-11 s late). Now a limited job's
 * waiting entries do not hold the reads back, and the reads pass over that job's other entries
 * (due/due-index.ts, waitingForSlots; due/due-scan.ts, skipJobs).
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';

describe("simulate: a limited job's backlog beside other schedules", () => {
  it('the others run on time while 45 wait for 3 starts a second; every one of the 45 runs once (seeds 1, 2)', async () => {
    for (const seed of [1, 2]) {
      const start = 1.9e12 + 5_000;
      const late: number[] = [];
      let mails = 0;
      const options: SimulateOptions = {
        seed,
        nodes: 3,
        durationMs: 40_000,
        faults: { latencyMs: [1, 20] },
        scheduler: { pollInterval: '200ms' },
        jobs: [
          {
            name: 'mail',
            options: { lockAtMostFor: '3s', rateLimit: { max: 3, per: '1s' }, misfireThreshold: '60s' },
            schedules: Array.from({ length: 45 }, (_, i) => ({ id: `m${i}`, at: start })),
            handler: async (_ctx, sim) => {
              mails++;
              await sim.sleep(20);
            },
          },
          {
            name: 'other',
            options: { lockAtMostFor: '3s' },
            schedules: Array.from({ length: 3 }, (_, i) => ({ id: `o${i}`, every: '1s' })),
            handler: async (ctx, sim) => {
              late.push(sim.now() - (ctx.fireTime.getTime() - 1.9e12));
            },
          },
        ],
      };
      const result = await simulate(options);
      if (!result.ok) expect.fail(formatReport(options, result));
      expect(mails, `seed ${seed}: mails`).toBe(45);
      // Generous (a tick, a read gap and the claim round trips are ~0.2 s): before, 8-11 s.
      expect(Math.max(...late), `seed ${seed}: the other job's lateness, ms`).toBeLessThan(1_000);
    }
  }, 60_000);
});
