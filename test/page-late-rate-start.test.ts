/**
 * A page's rate-limited runs launched more than LATE_START_MS after their claim was sent (a slow
 * claim answer, a node short of CPU) ask the rate window for their starts again — together, in
 * one write for the page, then start the lean way (run/page-batch.ts `startLate`). Each run asked
 * alone before, through executeRun, one write of the job's limit record after another: a node
 * slowed down that way slowed down further (bench:scale --variant rate with CPU profiles: two of
 * four nodes ran ~750 runs per 20 s that way, the fan-out took 37 s instead of 13). Memory store
 * whose page claims answer 300 ms late; real clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';
import { openStore } from '../src/index.js';
import { createScheduler, type Scheduler } from '../src/scheduler/index.js';
import { keys } from '../src/scheduler/keys.js';
import type { JobContext } from '../src/scheduler/types.js';
import type { PageOp, Store } from '../src/store/types.js';
import { until } from './harness/scheduler-suite.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const stops: Scheduler[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s.stop();
});

/** `st` whose page claims (those moving due entries) answer `lateMs` after they were applied; the limit record's writes counted. */
function lateClaims(st: Store, lateMs: number): { store: Store; limitWrites: () => number } {
  let limitWrites = 0;
  const store = new Proxy(st, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== 'claimPage') return value;
      return async (lease: unknown, ops: readonly PageOp[]) => {
        const moves = (k: string | undefined) => k?.startsWith('due|') === true;
        const limits = (k: string | undefined) => k?.startsWith('lim|') === true;
        if (ops.some((o) => (o.op === 'move' ? limits(o.from) : limits(o.key)))) limitWrites++;
        const out = await (value as Store['claimPage']).call(target, lease as never, ops);
        if (ops.some((o) => o.op === 'move' && moves(o.from))) await sleep(lateMs);
        return out;
      };
    },
  }) as Store;
  return { store, limitWrites: () => limitWrites };
}

describe('a page launched late for its rate grant', () => {
  it('asks the window once for its runs, not once per run, and runs each once', async () => {
    const st = await openStore(`memory:late-rate-${randomId(5)}`);
    const { store, limitWrites } = lateClaims(st, 300);
    const s = createScheduler({ store, node: `n-${randomId(4)}`, pollInterval: '200ms', concurrency: 100 });
    stops.push(s);
    const runs: JobContext[] = [];
    const job = `late-${randomId(5)}`;
    // A limit far above the pace: every ask is granted in full.
    s.define(job, { rateLimit: { max: 100_000, per: '1s' }, misfireThreshold: '1h' }, (ctx) => {
      runs.push(ctx);
    });
    const at = (await st.now()) + 1_500;
    const n = 400;
    await s.schedules.upsert(Array.from({ length: n }, (_, i) => ({ id: `s${i}`, job, at })));
    await s.start();
    await until(() => runs.length >= n, 60_000, `${n} runs`);
    await sleep(300);
    expect(new Set(runs.map((r) => r.scheduleId)).size).toBe(n);
    expect(runs.length).toBe(n);
    // Per page (at most 50 runs here: half the slots per tick): its reservation, one late ask,
    // the return of what it did not use. One write per run before (400 and more).
    const writes = limitWrites();
    expect(writes, `${writes} writes of the limit record for ${n} runs`).toBeLessThan(n / 4);
  }, 90_000);

  it('stopped while its runs wait for the window, none starts, stop() does not wait, and another node runs them', async () => {
    const st = await openStore(`memory:late-rate-${randomId(5)}`);
    const { store } = lateClaims(st, 300);
    const job = `wait-${randomId(5)}`;
    const runs: { node: string; ctx: JobContext }[] = [];
    const nodeOf = (name: string, on: Store) => {
      const s = createScheduler({ store: on, node: name, pollInterval: '200ms', concurrency: 100 });
      stops.push(s);
      // Ten starts per 5 s: the tick's grant takes them all, and the late page's second ask
      // waits for the window to move on (the grant's starts stay counted).
      s.define(
        job,
        { rateLimit: { max: 10, per: '5s' }, misfireThreshold: '1h', lockAtMostFor: '5s' },
        (ctx) => {
          runs.push({ node: name, ctx });
        },
      );
      return s;
    };
    const a = nodeOf('a', store);
    const at = (await st.now()) + 1_000;
    await a.schedules.upsert(Array.from({ length: 10 }, (_, i) => ({ id: `w${i}`, job, at })));
    await a.start();
    await until(
      async () => (await st.scan(keys.pageRecordPrefix(job), { limit: 1 })).length > 0,
      30_000,
      'a page',
    );
    await sleep(800);
    const t0 = performance.now();
    await a.stop();
    // Before, stop() waited out its stopTimeout (30 s) for runs whose handlers were never called.
    expect(performance.now() - t0, 'stop() took').toBeLessThan(10_000);
    expect(runs).toEqual([]);
    // Nothing is lost: another node takes the page over and runs each of them once.
    const b = nodeOf('b', st);
    await b.start();
    await until(() => runs.length >= 10, 60_000, 'the ten runs on b');
    await sleep(500);
    expect(runs.map((r) => r.node)).toEqual(Array(10).fill('b'));
    expect(new Set(runs.map((r) => r.ctx.scheduleId)).size).toBe(10);
  }, 120_000);
});
