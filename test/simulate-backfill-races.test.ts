/**
 * Backfills racing the scheduler's own handling of the same fire times, under the fault mix
 * (simulator seeds that found them; docs/backfill.md):
 * - a stored schedule's catch-up due entry that reaches a fire time a backfill already ran is
 *   refused by that run's "done" hold: the entry moves on past it (the fire time is handled),
 *   never stays there refused until the hold ends — the schedule ran nothing more (seed 23);
 * - a fire time queued behind its overlap gate when `backfill()` is called has not run: if its
 *   queue records it skipped instead (superseded by a later fire time), the backfill runs it —
 *   neither run nor on record with a reason, it was lost (seeds 1, 2, 10; overlap `skip`'s queue
 *   behind a replay, seed 137).
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimJob, type SimulateOptions, simulate } from '../src/testing/index.js';
import { EPOCH } from '../src/testing/simulate/sim-store.js';
import { SIM_FAULTS } from './fixtures/sim-faults.js';
import { PAUSE_BACKFILL_MIX } from './fixtures/sim-pause-backfill-mix.js';

/** Store ms of virtual second `s`. */
const sec = (s: number) => EPOCH + s * 1_000;

type Misfire = 'skip' | 'run-once' | 'catch-up';

/**
 * Three jobs on three nodes: `tick` every second, `report` with stored schedules u1-u3, `queued`
 * with overlap `queue` (runs longer than its interval); with `pauses`, each is paused a while;
 * each has backfills over what it missed.
 */
function jobs(misfire: Misfire, pauses: boolean): SimJob[] {
  return [
    {
      name: 'tick',
      options: { every: '1s', lockAtMostFor: '3s', misfire },
      runMs: [20, 400],
      ...(pauses && {
        pauses: [
          { at: 6_000, resumeAt: 11_500, note: 'down' },
          { at: 20_000, resumeAt: 23_000 },
        ],
      }),
      backfills: [{ from: sec(4), to: sec(15), at: 16_000 }],
    },
    {
      name: 'report',
      options: { lockAtMostFor: '3s', misfire },
      runMs: [20, 400],
      schedules: [
        { id: 'u1', every: '1s' },
        { id: 'u2', every: '2s' },
        { id: 'u3', every: '1s' },
      ],
      ...(pauses && {
        pauses: [
          { scheduleId: 'u1', at: 5_000, resumeAt: 10_000 },
          { at: 12_000, resumeAt: 15_000 },
        ],
      }),
      backfills: [
        { scheduleId: 'u1', from: sec(-3), to: sec(12), at: 16_000 },
        { scheduleId: 'u3', from: sec(0), to: sec(20), at: 21_000 },
      ],
    },
    {
      name: 'queued',
      options: { lockAtMostFor: '3s', overlap: 'queue', every: '2s', misfire },
      runMs: [200, 2_500],
      ...(pauses && { pauses: [{ at: 8_000, resumeAt: 13_000 }] }),
      backfills: [{ from: sec(0), to: sec(14), at: 15_000 }],
    },
  ];
}

async function expectOk(options: SimulateOptions): Promise<void> {
  const result = await simulate(options);
  if (!result.ok) expect.fail(formatReport(options, result));
}

describe('simulate: backfills racing the scheduler', () => {
  it('a catch-up entry that reaches a fire time a backfill ran moves on past it (seed 23)', async () => {
    await expectOk({
      seed: 23,
      nodes: 3,
      durationMs: 40_000,
      faults: SIM_FAULTS,
      jobs: jobs('catch-up', true),
    });
  });

  it('a fire time queued behind its gate at the call, then superseded, is run by the backfill (seeds 1, 2, 10)', async () => {
    for (const seed of [1, 2, 10])
      await expectOk({ seed, nodes: 3, durationMs: 40_000, faults: SIM_FAULTS, jobs: jobs('skip', false) });
  });

  it("the same under overlap 'skip': a replay queued behind its gate (seed 137)", async () => {
    const mix = PAUSE_BACKFILL_MIX;
    // Seed 26 until job triggers were claimed ahead of their fire times (due/claim-lead.ts), then
    // seed 12, until a failed tick put back what it had taken (due/due.ts, unTake), then seed 9,
    // until the first node to start wrote the job's high-water mark (due.ts, initialCursor), then
    // seed 118, until a skip for overlap needed the mark of a run whose handler was called
    // (run/invoked-mark.ts), then seeds 9 and 37 (tick@+12 s), until a misfire's skip claimed
    // what it skips (due/skip-fence.ts); each change of timing moves the story to another seed
    // and fire time: seed 137 plays it now with tick@+13 s (the only one of the first 800),
    // checked below.
    const options: SimulateOptions = {
      seed: 137,
      nodes: 3,
      durationMs: 40_000,
      faults: SIM_FAULTS,
      jobs: mix,
    };
    const result = await simulate(options);
    if (!result.ok) expect.fail(formatReport(options, result));
    // tick@+13, a run-once replay, was queued behind its gate when backfill() was called (18 s,
    // the mix's backfill of tick), then superseded by a later fire time; the backfill ran it.
    const at = (re: RegExp) => {
      const line = result.trace.find((l) => re.test(l));
      return line === undefined ? undefined : Number.parseFloat(line);
    };
    const queued = at(/queued +tick@\+13\.000s behind its gate/);
    const superseded = at(/tick@\+13\.000s skipped \(superseded/);
    const backfilled = at(/tick@\+13\.000s attempt=2 token=\d+ source=backfill/);
    expect(queued).toBeLessThan(18);
    expect(superseded).toBeGreaterThan(18);
    expect(backfilled).toBeGreaterThan(superseded!);
  });
});
