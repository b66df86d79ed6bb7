/**
 * A stored schedule's fire times held back behind a page that had not started (its claim's reply
 * lost: the page is recovered after its lease) are late once it has run, not on time: the misfire
 * policy judges them (claim/prev-run.ts, `missed`; due/due-entry.ts, Candidate.replanLate).
 *
 * Here: one node, one schedule every second, runs of 900 ms; the page claim at 3 s is applied and
 * its reply lost, so +3 s is recovered at ~6.7 s. Before, +4 s to +8 s were then each claimed as
 * on time once the run before had ended, one after another ~3.6 s late (and later stretches
 * alike): on time on record, late in fact (in the simulator's sweeps, `lim,rl,mc,pages` with sim
 * faults, seed 2: pages/p15 fell further behind to the end). Now the stretch missed behind the
 * page is on record as a misfire (run-once: skipped, the latest replayed), and every start later
 * than the threshold is a misfire replay.
 */
import { describe, expect, it } from 'vitest';
import { OncelyError } from '../src/core/errors.js';
import { MemoryStore } from '../src/store/memory.js';
import type { LeaseRequest, PageClaim } from '../src/store/types.js';
import type { NormalizedPageOp } from '../src/store/validate-page.js';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { EPOCH } from '../src/testing/simulate/sim-store.js';

/** The store server: the first page claim at `at` (virtual ms) or later is applied, its reply lost. */
class LostClaimReply extends MemoryStore {
  lost = false;
  /** Virtual times (ms since EPOCH) of reads that asked for page records. */
  readonly pageLooks: number[] = [];
  constructor(
    private readonly virtualNow: () => number,
    private readonly at: number,
  ) {
    super({ now: virtualNow });
  }
  protected override async doGetMany(keys: readonly string[]): Promise<(string | null)[]> {
    if (keys.some((k) => k.startsWith('ctl|page|'))) this.pageLooks.push(this.virtualNow() - EPOCH);
    return super.doGetMany(keys);
  }
  protected override async doClaimPage(
    request: LeaseRequest,
    ops: readonly NormalizedPageOp[],
  ): Promise<PageClaim> {
    const claim = await super.doClaimPage(request, ops);
    if (this.lost || this.virtualNow() - EPOCH < this.at || !claim.lease) return claim;
    this.lost = true;
    throw new OncelyError('STORE_UNAVAILABLE', 'simulated: the page claim was applied, its reply lost');
  }
}

describe('simulate: fire times late behind a page that started late', () => {
  it('are judged by the misfire policy once it has run: the schedule catches up', async () => {
    let server: LostClaimReply | undefined;
    const options: SimulateOptions = {
      seed: 1,
      nodes: 1,
      durationMs: 25_000,
      jobs: [
        {
          name: 'p',
          options: { lockAtMostFor: '3s' },
          runMs: [900, 900],
          schedules: [{ id: 'p1', every: '1s' }],
        },
      ],
      server: (clock) => {
        server = new LostClaimReply(clock, 3_000);
        return server;
      },
    };
    const result = await simulate(options);
    if (!result.ok) expect.fail(formatReport(options, result));
    expect(server!.lost).toBe(true);
    // From the outside: a start later than the misfire threshold (1 s; a little more for the
    // node's poll) is the misfire policy's replay or the recovery, never an on-time start — and
    // the stretch held back behind the page is on record as a misfire.
    const starts = result.trace
      .filter((l) => / start +p\/p1@/.test(l))
      .map((l) => ({
        at: Number.parseFloat(l),
        fire: Number(/@\+([\d.]+)s/.exec(l)![1]),
        source: /source=(\w+)/.exec(l)![1],
      }));
    const lateOnTime = starts.filter((s) => s.at - s.fire > 1.2 && s.source === 'schedule');
    expect(lateOnTime, result.trace.filter((l) => /p1@/.test(l)).join('\n')).toEqual([]);
    expect(result.trace.some((l) => / misfired +p\/p1@\+\d+\.000s skipped/.test(l))).toBe(true);
    // While the page waited for its recovery (its lease ends at ~6 s), the fire times behind it
    // were judged again at each poll (1 s here), with two page-record reads each — not at every
    // turn of the loop: before NodeState.claimWaits, 70 such reads in these 2.5 s.
    const waiting = server!.pageLooks.filter((t) => t >= 4_000 && t < 6_500);
    expect(waiting.length, `page-record reads at ${waiting.join(', ')}`).toBeLessThanOrEqual(10);
  });
});
