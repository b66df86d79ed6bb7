/**
 * The loop's back-off after failed ticks ends when the store is seen answering again: a write of a
 * run that ended (NodeState.storeAnswered, scheduler/loop.ts).
 *
 * Found by the simulator (`lim,rl,mc,pages`, sim faults, seed 39): a node's ticks failed through a
 * 5 s partition, its back-off doubling to 4 s; just after the heal its runs' writes went through,
 * but the tick they woke lost one reply — the fifth failure in a row — and the loop slept 8 s more.
 * The stored schedules it went first for waited for the other nodes to count them stalled.
 *
 * Here: one node; every store call fails from 1.5 s to 7 s (the ticks back off to 4 s), job
 * `long`'s run from 1 s ends at ~7.5 s and its writes go through, then one read of the tick it
 * wakes fails. Before the fix the loop slept 8 s: `tick`'s fire times from 8 s to 15 s were missed
 * (one misfire replay at ~15.6 s). Now the store's answer restarts the back-off at 0.5 s.
 */
import { describe, expect, it } from 'vitest';
import { OncelyError } from '../src/core/errors.js';
import { MemoryStore } from '../src/store/memory.js';
import type { LeaseRequest } from '../src/store/types.js';
import type { NormalizedScan, NormalizedWriteOp } from '../src/store/validate.js';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { EPOCH } from '../src/testing/simulate/sim-store.js';

/** The store server: down from `from` to `to` (virtual ms), then one read failing at `once` or after. */
class Outage extends MemoryStore {
  failedOnce = false;
  failures = 0;
  constructor(
    private readonly virtualNow: () => number,
    private readonly from: number,
    private readonly to: number,
    private readonly once: number,
  ) {
    super({ now: virtualNow });
  }

  private check(write: boolean): void {
    const t = this.virtualNow() - EPOCH;
    const down = t >= this.from && t < this.to;
    const lost = !down && !write && !this.failedOnce && t >= this.once;
    if (lost) this.failedOnce = true;
    if (!down && !lost) return;
    this.failures++;
    throw new OncelyError('STORE_UNAVAILABLE', 'simulated: the store is down');
  }

  protected override async doNow(): Promise<number> {
    this.check(false);
    return super.doNow();
  }
  protected override async doAcquire(requests: readonly LeaseRequest[]) {
    this.check(false);
    return super.doAcquire(requests);
  }
  protected override acquireOneNow(request: LeaseRequest) {
    this.check(false);
    return super.acquireOneNow(request);
  }
  protected override async doExtend(key: string, token: number, leaseMs: number) {
    this.check(false);
    return super.doExtend(key, token, leaseMs);
  }
  protected override async doGet(key: string) {
    this.check(false);
    return super.doGet(key);
  }
  protected override async doGetMany(keys: readonly string[]) {
    this.check(false);
    return super.doGetMany(keys);
  }
  protected override async doScan(scan: NormalizedScan) {
    this.check(false);
    return super.doScan(scan);
  }
  protected override async doApply(ops: readonly NormalizedWriteOp[]) {
    this.check(true);
    return super.doApply(ops);
  }
}

describe('simulate: the back-off after failed ticks', () => {
  it("ends when a run's writes go through: the fire times after the outage are not missed", async () => {
    let server: Outage | undefined;
    const options: SimulateOptions = {
      seed: 1,
      nodes: 1,
      durationMs: 20_000,
      jobs: [
        // Its first run (from +1 s) lasts through the outage; later fire times during its runs
        // are skipped for overlap (on record, naming it).
        { name: 'long', options: { every: '1s', lockAtMostFor: '30s' }, runMs: [6_500, 6_500] },
        { name: 'tick', options: { every: '1s', lockAtMostFor: '3s' }, runMs: [20, 50] },
      ],
      server: (clock) => {
        server = new Outage(clock, 1_500, 7_000, 7_200);
        return server;
      },
    };
    const result = await simulate(options);
    if (!result.ok) expect.fail(formatReport(options, result));
    expect(server!.failedOnce).toBe(true);
    expect(server!.failures).toBeGreaterThan(4);
    // From the outside: tick's fire times from 9 s to 14 s started on time (source `schedule`),
    // none of them a misfire. The trace's lines read `start    tick@+9.000s … source=schedule`.
    const onTime = (s: number) =>
      result.trace.some((l) => l.includes(` start    tick@+${s}.000s `) && l.includes('source=schedule'));
    const missed = [9, 10, 11, 12, 13, 14].filter((s) => !onTime(s));
    expect(missed, result.trace.filter((l) => /tick@|loop|misfired/.test(l)).join('\n')).toEqual([]);
  });
});
