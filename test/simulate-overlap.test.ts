/**
 * Overlap 'queue-all' and 'replace' (issue 32 item 5) in the deterministic simulator, under the
 * usual fault mix (lost replies and requests, partitions, crashes, drift, stalls): the checker
 * finds no second run of an occurrence, no lost fire time and no unjustified skip. 'queue-all'
 * records nothing superseded; under 'replace' runs are aborted with reason REPLACED (the trace's
 * failed lines) and the handlers that end on their signal free the gate for the next one.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { SIM_FAULTS } from './fixtures/sim-faults.js';

const options: Omit<SimulateOptions, 'seed'> = {
  nodes: 3,
  durationMs: 30_000,
  faults: SIM_FAULTS,
  jobs: [
    {
      // Runs of up to 1.4 s every second: a backlog now and then, which queue-all works off in order.
      name: 'all',
      options: { every: '1s', lockAtMostFor: '3s', overlap: 'queue-all' },
      runMs: [100, 1_400],
    },
    {
      name: 'all-stored',
      options: { lockAtMostFor: '3s', overlap: 'queue-all' },
      runMs: [100, 2_400],
      schedules: [{ id: 's', every: '2s' }],
    },
    {
      name: 'replace',
      options: { every: '1s', lockAtMostFor: '3s', overlap: 'replace' },
      // Waits on its signal: a newer fire time ends it.
      handler: async (ctx, sim) => {
        await sim.sleep(2_500, ctx.signal);
        if (ctx.signal.aborted) throw ctx.signal.reason;
      },
    },
  ],
};

describe('simulate: overlap queue-all and replace', () => {
  it('the checker bears every run and skip out; queue-all supersedes nothing; replace replaces', async () => {
    // Seeds 8, 13, 21 lost fire times before a stale oldest queued record (its fire time run by a
    // node that queued it twice) was dropped on a refused claim (Overlap.droppedStale): the
    // gate's queue waited behind it for the whole done hold.
    for (const seed of [1, 2, 6, 8, 13, 21]) {
      const result = await simulate({ ...options, seed });
      if (!result.ok) expect.fail(formatReport({ ...options, seed }, result));
      const all = result.trace.filter((l) => / all(-stored)?(\/s)?@/.test(l));
      expect(
        all.some((l) => l.includes('superseded')),
        `seed ${seed}`,
      ).toBe(false);
      // In order: each gate's fire times start oldest first — those that ran from their claim or
      // their queue (source schedule). A claim granted and not heard of or not started in time
      // (its reply lost, its node killed) runs once that is sorted out, possibly after later
      // ones: recovered (source recover), or queued late (a `waits` line, docs/overlap.md).
      // The trace names a stored schedule's occurrence `all-stored/s@+4.000s` in some lines and
      // `all-stored@+4.000s` in others: compared by job and fire time.
      const occ = (l: string) => / (all(?:-stored)?)(?:\/s)?@\+(\d+\.\d{3})s/.exec(l);
      const late = new Set(all.filter((l) => l.includes(' waits ')).map((l) => occ(l)?.slice(1).join('@')));
      for (const job of ['all', 'all-stored']) {
        const firsts = all
          .filter((l) => l.includes(' start ') && l.includes('source=schedule') && occ(l)?.[1] === job)
          .filter((l) => !late.has(occ(l)?.slice(1).join('@')))
          .map((l) => Number(occ(l)?.[2]));
        expect(firsts.length, `seed ${seed}: ${job} ran`).toBeGreaterThan(5);
        expect(firsts, `seed ${seed}: ${job} in order`).toEqual([...firsts].sort((x, y) => x - y));
      }
      expect(
        result.trace.some((l) => /replace@/.test(l) && l.includes('REPLACED')),
        `seed ${seed}: a run replaced`,
      ).toBe(true);
    }
  }, 120_000);
});
