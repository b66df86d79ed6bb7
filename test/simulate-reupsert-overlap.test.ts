/**
 * Stored schedules re-upserted while their runs go. The overlap gate is the schedule's id, whatever
 * its version: the new version's first fire time must not start while a run of the old version
 * goes (overlap `skip`: skipped naming that run, or held back until it ends). A page run judges
 * overlap by the run its due entry names (claim/prev-run.ts), and an upsert wrote the new
 * version's entry naming none: the first fire time started beside the old run — the simulator's
 * checker calls it `gate-overlap`. Found by a sweep of a busy fleet (three nodes, lost replies,
 * stalls, two crashes) over schedules re-upserted twice while they run: 30 of the first 50 seeds.
 * Three parts to the fix, each needed by one of the tests below (checked by turning it off):
 *  - the upsert names the old version's page run it finds in flight (control/replaced-runs.ts):
 *    the last test, whose old run is still going more than a minute after the upsert;
 *  - the claim of the new version's first fire time, within a minute of the upsert, looks again:
 *    the old version's page can be granted after the upsert, from a read made before it
 *    (claim/replaced-prev.ts; seed 31 fails without it, seed 4 only without both);
 *  - a node that met the old version's entry stale recorded its fire time skipped (`removed`)
 *    while such a late page ran it, and the new version's claim took that skip for the run's end;
 *    a skip under another token than the page's no longer ends its run (seed 17).
 */
import { expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { BUSY_RUN } from './fixtures/sim-faults.js';
import { REUPSERTED } from './fixtures/sim-jobs.js';

for (const seed of [4, 17, 31])
  it(`seed ${seed}: a re-upserted schedule's first fire time never starts beside the old version's run`, async () => {
    const options: SimulateOptions = { seed, ...BUSY_RUN, jobs: [REUPSERTED] };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
  });

/** Virtual 0 on the simulated store's clock (epoch ms). */
const T0 = 1_900_000_000_000;

it('a run of the old version still going when the new version first fires, over a minute after the upsert: skipped naming it', async () => {
  // Version 1 every 20 s, its runs 100 s long: +20 s runs until +120 s. Version 2, upserted at
  // +30 s, fires once at +100 s — 70 s after the upsert, past the window in which its claim looks
  // for the old version's runs itself (claim/replaced-prev.ts): only the run the upsert named in
  // the new entry stands between them.
  const options: SimulateOptions = {
    seed: 1,
    nodes: 2,
    durationMs: 140_000,
    jobs: [
      {
        name: 'long',
        options: { lockAtMostFor: '30s' },
        runMs: [100_000, 100_000],
        schedules: [
          { id: 'l', every: '20s', removeAt: 30_000 },
          { id: 'l', at: T0 + 100_000, upsertAt: 30_000 },
        ],
      },
    ],
  };
  const result = await simulate(options);
  expect(result.violations, formatReport(options, result)).toEqual([]);
  const lines = result.trace.filter((l) => l.includes('long/l@+100.000s'));
  expect(
    lines.some((l) => / skipped /.test(l)),
    lines.join('\n'),
  ).toBe(true);
  expect(
    lines.some((l) => / start /.test(l)),
    lines.join('\n'),
  ).toBe(false);
});
