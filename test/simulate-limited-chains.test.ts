/**
 * A catch-up chain of a stored schedule under `maxConcurrency`: each replay's claim moves the
 * schedule's entry to the next missed fire time, at an older key than the job's other entries
 * waiting for permits. Reads passed over every entry of a job with entries waiting here
 * (due/due-index.ts, so that a backlog is not read again and again), so the chain's next entry was
 * read only once those went stale (two polls and a second) — on a fleet where every node kept a
 * few of the job's entries, one replay every ~2-3 s for runs of 50-300 ms, and a schedule every
 * 2 s never caught up before the end. Now a read passes over only the waiting entries and those
 * after them (due/due-scan.ts, `WaitingEntries`); an entry that came since at an older key is read.
 *
 * Seeds of `npm run sweep -- --jobs lim,rl,mc,pages --faults sim` that lost mc's last fire times
 * before. Over seeds 1-300 of that mix: 15 failing before, 1 after; `pages,rep,rl,ps,cu,shp,mc`
 * seeds 1-200: 20 → 6 (every one left the same class, a chain at +18 s).
 *
 * Seeds 154 and 259: the same chains, where a step's preferred node had died and still counted as
 * live (its heartbeat, ~11 s): the other nodes took the step over only once it had lain two polls
 * and a second, as they did not take over entries of a job with entries waiting for permits
 * (due/due-scan.ts). They take them over after the grace now, as any other entry. Over seeds 1-400
 * of `lim,rl,mc,pages`: 3 failing before, 0 after; of `pages,rep,rl,ps,cu,shp,mc` the seeds losing
 * `mc` chains 15 → 9 (20 failing seeds before and after: the unlimited `cu` chains moved).
 */
import { describe, expect, it } from 'vitest';
import { WaitingEntries } from '../src/scheduler/due/due-scan.js';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { SIM_RUN } from './fixtures/sim-faults.js';
import { LIMITED, LIMITED_CATCH_UP, PAGED, RATE_LIMITED } from './fixtures/sim-jobs.js';

describe('catch-up chains under maxConcurrency (simulator, three nodes, sim faults)', () => {
  for (const seed of [99, 143, 154, 259]) {
    it(`seed ${seed}: every fire time of the chains ran or is on record`, async () => {
      const options: SimulateOptions = {
        ...SIM_RUN,
        seed,
        jobs: [LIMITED, RATE_LIMITED, LIMITED_CATCH_UP, PAGED],
      };
      const result = await simulate(options);
      expect(result.violations, formatReport(options, result)).toEqual([]);
    });
  }
});

describe('WaitingEntries: what a read passes over', () => {
  const entry = (at: number, id: string, job = 'mc') => ({
    key: `due|${String(at).padStart(15, '0')}|${id}|v`,
    schedule: { job },
  });
  const waiting = new WaitingEntries([entry(4_000, 'a'), entry(6_000, 'b')]);

  it('the waiting entries, and the later ones of their job', () => {
    expect(waiting.passesOver('mc', entry(4_000, 'a').key)).toBe(true);
    expect(waiting.passesOver('mc', entry(6_000, 'b').key)).toBe(true);
    expect(waiting.passesOver('mc', entry(6_000, 'c').key)).toBe(true);
    expect(waiting.passesOver('mc', entry(9_000, 'a').key)).toBe(true);
  });

  it('not an entry of their job at an earlier key that was not kept, nor any of another job', () => {
    expect(waiting.passesOver('mc', entry(2_000, 'c').key)).toBe(false);
    expect(waiting.passesOver('mc', entry(5_000, 'a').key)).toBe(false);
    expect(waiting.passesOver('other', entry(9_000, 'a', 'other').key)).toBe(false);
  });
});
