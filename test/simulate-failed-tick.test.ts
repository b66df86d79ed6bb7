/**
 * A tick that fails half-way: what its earlier takes had drained from their sources' queues is
 * offered again at the next tick (due/due.ts, `unTake`), not dropped with the tick's candidates.
 *
 * Found by the simulator (three jobs, pauses, the fault mix, seed 5): a node had queued +21 s
 * before a pause (another node's share, waiting for the grace); at the resume a tick drained it,
 * then the same tick's misfire handling lost its high-water write's reply and threw. The cursor
 * was past +21 s and the queue empty: nobody ran it or recorded it.
 */
import { describe, expect, it } from 'vitest';
import { OncelyError } from '../src/core/errors.js';
import { keys } from '../src/scheduler/keys.js';
import { MemoryStore } from '../src/store/memory.js';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { EPOCH } from '../src/testing/simulate/sim-store.js';

/** The store server, failing the reads of job `b`'s high-water mark from `from` (virtual ms) on, `times` times. */
class FailingMark extends MemoryStore {
  failed = 0;
  constructor(
    private readonly virtualNow: () => number,
    private readonly from: number,
    private readonly times: number,
  ) {
    super({ now: virtualNow });
  }
  override async get(key: string): Promise<string | null> {
    if (
      key === keys.highWater('b', undefined) &&
      this.virtualNow() >= EPOCH + this.from &&
      this.failed < this.times
    ) {
      this.failed++;
      throw new OncelyError('STORE_UNAVAILABLE', 'simulated: the high-water mark read failed');
    }
    return super.get(key);
  }
}

describe('simulate: a tick that fails after its first takes', () => {
  it("puts back what it drained: job a's fire times are all accounted for while b's misfire handling fails", async () => {
    let server: FailingMark | undefined;
    // One node; `b` paused from 1.5 s to 4.2 s, so that each tick after the resume handles b's
    // missed fire times (a read of b's mark) beside a's fire time, in turns (the tick rotates
    // which source goes first): the reads fail for the first ticks after the resume.
    const options: SimulateOptions = {
      seed: 1,
      nodes: 1,
      durationMs: 25_000,
      jobs: [
        { name: 'a', options: { every: '1s', lockAtMostFor: '3s' }, runMs: [20, 50] },
        {
          name: 'b',
          options: { every: '1s', lockAtMostFor: '3s', misfire: 'run-once' },
          runMs: [20, 50],
          pauses: [{ at: 1_500, resumeAt: 4_200 }],
        },
      ],
      server: (clock) => {
        server = new FailingMark(clock, 4_200, 3);
        return server;
      },
    };
    const result = await simulate(options);
    if (!result.ok) expect.fail(formatReport(options, result));
    expect(server!.failed).toBe(3);
    // The checker (above) holds every fire time of `a` to having run or been said skipped as a
    // misfire: before, the one a failed tick had drained was neither (lost-fire-time).
    expect(result.trace.filter((l) => / start +a@/.test(l)).length).toBeGreaterThan(15);
  });
});
