/**
 * Exclusions and calendars in the deterministic simulator (oncely/testing, issue 32 items 3 and
 * 10): a job's own trigger with a cron exclusion and stored schedules with calendar exclusions
 * (pages and per-occurrence claims), under the usual fault mix. The checker bears every `excluded`
 * skip out against the lists and the simulation's calendars, and still finds every other fire
 * time run or skipped for a reason.
 */
import { describe, expect, it } from 'vitest';
import { OncelyError } from '../src/core/errors.js';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { SIM_FAULTS } from './fixtures/sim-faults.js';

// The simulated store's clock starts at 2030-03-17T17:46:40Z: every fire time of a 40 s run is
// on the 17th in UTC, and on the 18th in Tokyo (UTC+9).
const options: Omit<SimulateOptions, 'seed'> = {
  nodes: 3,
  durationMs: 40_000,
  faults: SIM_FAULTS,
  calendars: [
    { id: 'today', dates: ['2030-03-17'] },
    { id: 'tokyo-today', dates: ['2030-03-18'], timezone: 'Asia/Tokyo' },
    { id: 'elsewhen', dates: ['2031-01-01'] },
  ],
  jobs: [
    {
      name: 'own',
      // Every second; those at a second divisible by 5 are excluded.
      options: { every: '1s', lockAtMostFor: '2s', exclude: [{ cron: '*/5 * * * * *' }] },
      runMs: [20, 400],
    },
    {
      name: 'paged',
      options: { lockAtMostFor: '2s', overlap: 'allow' },
      runMs: [20, 600],
      schedules: [
        { id: 'all-out', every: '2s', exclude: [{ calendar: 'today' }] },
        { id: 'tokyo-out', every: '2s', exclude: [{ calendar: 'tokyo-today' }] },
        { id: 'all-in', every: '2s', exclude: [{ calendar: 'elsewhen' }] },
      ],
    },
    {
      name: 'queued',
      options: { lockAtMostFor: '2s', overlap: 'queue' },
      runMs: [20, 600],
      schedules: [{ id: 'q-out', every: '2s', exclude: [{ calendar: 'today' }] }],
    },
  ],
};

describe('simulate: exclusions and calendars', () => {
  it('every excluded fire time is recorded skipped (excluded) and borne out; the rest as always', async () => {
    for (const seed of [1, 2, 3]) {
      const result = await simulate({ ...options, seed });
      if (!result.ok) expect.fail(formatReport({ ...options, seed }, result));
      const excluded = result.trace.filter((l) => l.includes('skipped (excluded'));
      for (const id of ['all-out', 'tokyo-out', 'q-out'])
        expect(
          excluded.some((l) => l.includes(id)),
          `${id} excluded in seed ${seed}`,
        ).toBe(true);
      expect(excluded.some((l) => l.includes('all-in'))).toBe(false);
      // The job's own trigger: only fire times at a second divisible by 5.
      const own = excluded.flatMap((l) => /stored +own@\+(\d+)\.(\d{3})s/.exec(l) ?? []);
      expect(own.length).toBeGreaterThan(0);
      for (const l of excluded.filter((x) => /stored +own@/.test(x)))
        expect(Number(/own@\+(\d+)\.000s/.exec(l)?.[1]) % 5, l).toBe(0);
      const ran = result.trace.filter((l) => l.includes('all-in'));
      expect(ran.length).toBeGreaterThan(0);
    }
  }, 120_000);

  it('a bad calendar is refused before anything runs', async () => {
    await expect(
      simulate({ ...options, seed: 1, calendars: [{ id: 'x', dates: ['2030-02-30'] }] }),
    ).rejects.toThrow(OncelyError);
    await expect(simulate({ ...options, seed: 1, calendars: [] })).rejects.toThrow(
      /names calendar "today", which calendars does not list/,
    );
  });
});
