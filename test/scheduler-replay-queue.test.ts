/**
 * An on-time fire time that finds the overlap gate held by a misfire replay queues behind the
 * replay and runs after it, instead of being skipped (src/scheduler/claim/overlap.ts, REPLAY_MARK) —
 * driven by time alone, on the simulator's virtual clock (no store wrapper forcing the order).
 *
 * Both nodes of a 2-node cluster go down at 5.5 s (an outage of the whole service) and come back
 * at 10.2 s (n1) and 10.5 s (n2). n1 finds 6–9 missed: run-once skips 6–8 and replays 9, whose
 * handler takes 0.5 s. n2, up while that replay runs, claims 10 on time and finds the gate held
 * by the replay: with overlap 'skip' it would record 10 as skipped for "overlapping" catch-up
 * work — a fire time nobody missed. It queues instead, and 10 runs once the replay is over.
 */
import { describe, expect, it } from 'vitest';
import { createScheduler } from '../src/scheduler/index.js';
import { keys } from '../src/scheduler/keys.js';
import { MemoryStore } from '../src/store/memory.js';
import type { WriteOp } from '../src/store/types.js';
import { simulate } from '../src/testing/index.js';
import { EPOCH } from '../src/testing/simulate/sim-store.js';

/** The store server, noting when (virtual ms) a fire time was queued as the gate's pending run. */
class WatchedServer extends MemoryStore {
  readonly queued: { fireTime: number; at: number }[] = [];
  constructor(private readonly storeNow: () => number) {
    super({ now: storeNow });
  }
  override async apply(ops: readonly WriteOp[]): Promise<boolean[]> {
    for (const op of ops)
      if (op.op === 'put' && op.key.startsWith(`${keys.pendingOfGate('tick', undefined, undefined)}|`))
        this.queued.push({
          fireTime: (JSON.parse(op.value) as { fireTime: number }).fireTime,
          at: this.storeNow() - EPOCH,
        });
    return super.apply(ops);
  }
}

/** A run as the trace shows it: its start and end (virtual ms), token and source. */
interface Run {
  startedAt: number;
  endedAt: number | undefined;
  token: number;
  source: string;
}

function runsOf(trace: string[], fireTime: number): Run[] {
  const label = `tick@+${(fireTime / 1000).toFixed(3)}s`;
  const runs: Run[] = [];
  for (const line of trace) {
    const start = new RegExp(
      `^ *(\\d+\\.\\d+)s  \\S+ +start +${label.replace(/[.+]/g, '\\$&')} attempt=\\d+ token=(\\d+) source=(\\w+)`,
    ).exec(line);
    if (start)
      runs.push({
        startedAt: Number(start[1]) * 1000,
        endedAt: undefined,
        token: Number(start[2]),
        source: start[3]!,
      });
    const end = new RegExp(
      `^ *(\\d+\\.\\d+)s  \\S+ +end +${label.replace(/[.+]/g, '\\$&')} token=(\\d+)`,
    ).exec(line);
    if (end) {
      const run = runs.find((r) => r.token === Number(end[2]));
      if (run) run.endedAt = Number(end[1]) * 1000;
    }
  }
  return runs;
}

describe('an on-time fire time behind a misfire replay (virtual time)', () => {
  it('queues behind the replay and runs after it, not skipped; nothing runs twice', async () => {
    const replayed = 9_000;
    const onTime = 10_000;
    let server: WatchedServer | undefined;
    const result = await simulate({
      seed: 1,
      nodes: 2,
      healthyNodes: 0,
      durationMs: 20_000,
      jobs: [
        {
          name: 'tick',
          options: { every: '1s', misfire: 'run-once', overlap: 'skip', lockAtMostFor: '5s' },
          // The replay takes half an interval: the next fire time falls due while it runs.
          handler: (ctx, sim) =>
            sim.sleep(ctx.fireTime.getTime() === EPOCH + replayed ? 500 : 100, ctx.signal),
        },
      ],
      plan: {
        crashes: [
          { node: 0, at: 5_500, downMs: 4_700, newId: false },
          { node: 1, at: 5_500, downMs: 5_000, newId: false },
        ],
        partitions: [],
        drift: [0, 0],
        skew: [0, 0],
      },
      server: (clock) => {
        server = new WatchedServer(clock);
        return server;
      },
    });
    expect(result.violations).toEqual([]);
    const trace = result.trace;
    // The replay: the latest missed fire time, run once, as a misfire replay.
    const [replay, ...moreReplays] = runsOf(trace, replayed);
    expect(moreReplays).toEqual([]);
    expect(replay?.source).toBe('misfire');
    expect(replay?.endedAt).toBeDefined();
    // 10 ran once, after the replay ended, and was never reported skipped.
    const [run, ...again] = runsOf(trace, onTime);
    expect(again).toEqual([]);
    expect(run).toBeDefined();
    expect(run!.startedAt).toBeGreaterThanOrEqual(replay!.endedAt!);
    expect(run!.token).toBeGreaterThan(replay!.token);
    expect(trace.filter((l) => /skipped +tick@\+10\.000s/.test(l))).toEqual([]);
    // 10 was queued while the replay held the gate (the path under test was taken: not
    // claimed only after the replay ended).
    const queued = server!.queued.filter((q) => q.fireTime === EPOCH + onTime);
    expect(queued).toHaveLength(1);
    expect(queued[0]!.at).toBeGreaterThan(replay!.startedAt);
    expect(queued[0]!.at).toBeLessThan(replay!.endedAt!);
    // The recorded history says the same: 10 succeeded once, no skipped entry. Every fire time
    // from the replay on ran at most once and has exactly one final entry: the ones after 10 may
    // be skipped for overlap — 10, queued, runs late and can still be running when 11 falls due,
    // which overlap 'skip' skips — but none is lost or run twice.
    const history = await createScheduler({ store: server! }).history({ job: 'tick', limit: 100 });
    const at = (f: number) => history.filter((h) => h.fireTime.getTime() === EPOCH + f);
    expect(at(onTime).map((h) => h.status)).toEqual(['succeeded']);
    expect(at(replayed).map((h) => h.status)).toEqual(['succeeded']);
    for (let f = replayed; f <= 19_000; f += 1_000) {
      expect(runsOf(trace, f).length, `runs of fire time +${f / 1000}s`).toBeLessThanOrEqual(1);
      expect(
        at(f).map((h) => h.status),
        `fire time +${f / 1000}s`,
      ).toSatisfy((s: string[]) => s.length === 1 && (s[0] === 'succeeded' || s[0] === 'skipped'));
    }
  });
});
