/**
 * Cluster-wide faults: the store server's clock stepping under running nodes, a herd of 100
 * schedulers starting at once on PostgreSQL, and two versions of one job definition live at once
 * (a rolling deploy). Each asserts on the runs the handlers saw (fire time, token, node) and on
 * the schedulers' events.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';
import { openStore } from '../src/index.js';
import { createScheduler, type Scheduler } from '../src/scheduler/index.js';
import type { JobContext } from '../src/scheduler/types.js';
import { MemoryStore } from '../src/store/memory.js';
import type { Store } from '../src/store/types.js';
import { sleep } from '../src/testing/suite-context.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { until } from './harness/scheduler-suite.js';

interface Run {
  node: string;
  version?: string;
  fireTime: number;
  token: number;
  attempt: number;
  /** Order in which the handlers started. */
  seq: number;
}

const live: Scheduler[] = [];
const stores: Store[] = [];
afterEach(async () => {
  await Promise.all(live.splice(0).map((s) => s.stop()));
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

/** Fire time → how many runs it had. */
function countByFireTime(runs: Run[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const r of runs) counts.set(r.fireTime, (counts.get(r.fireTime) ?? 0) + 1);
  return counts;
}

describe('the store server clock steps while a scheduler runs (memory store, injected store clock)', () => {
  it('+1 h, then -5 s: tokens keep increasing, no flood of replays, nothing already run runs again, runs resume', async () => {
    const space = `store-step-${randomId(6)}`;
    let offset = 0;
    // The store's clock (every lease, record TTL and store.now() reads it); the nodes' own clocks
    // are untouched.
    const now = () => performance.timeOrigin + performance.now() + offset;
    const runs: Run[] = [];
    const misfired: unknown[] = [];
    const errors: unknown[] = [];
    for (const name of ['a', 'b', 'c']) {
      const store = new MemoryStore({ space, now });
      const s = createScheduler({ store, node: name, pollInterval: '100ms' });
      s.define('tick', { every: '1s', lockAtMostFor: '3s' }, async (ctx: JobContext) => {
        runs.push({
          node: name,
          fireTime: ctx.fireTime.getTime(),
          token: ctx.token,
          attempt: ctx.attempt,
          seq: runs.length,
        });
        await sleep(600);
      });
      s.on('misfired', (e) => misfired.push(e));
      s.on('error', (e) => errors.push(e));
      live.push(s);
    }
    await Promise.all(live.map((s) => s.start()));
    await until(() => runs.length >= 2, 8_000, 'two runs');
    const before = runs.length;
    await until(() => runs.length > before, 4_000, 'a run in progress');
    offset = 3_600_000; // +1 h, while that run works
    const runningAtStep = runs.at(-1)!;
    await sleep(2_000);
    const beforeBack = runs.length;
    const highest = Math.max(...runs.map((r) => r.fireTime));
    offset = 3_600_000 - 5_000; // then -5 s
    await until(() => runs.length > beforeBack, 10_000, 'runs to resume after the -5 s step');
    const after = runs.slice(beforeBack);
    // Fencing tokens keep increasing in the order the runs started, through both steps.
    for (let i = 1; i < runs.length; i++) expect(runs[i]!.token).toBeGreaterThan(runs[i - 1]!.token);
    // No flood: the missed hour is not 3,600 runs (nor 3,600 misfire events) — at most one span
    // skipped and one replay announced per node (3 nodes), whenever each notices the step.
    expect(runs.length).toBeLessThan(20);
    expect(misfired.length).toBeLessThanOrEqual(6);
    // After the -5 s step nothing already run runs again.
    for (const r of after) expect(r.fireTime).toBeGreaterThan(highest);
    // Every fire time ran once — except, at most, the one running at the +1 h step: the step
    // expired its lease on the store at once, so another node may claim it anew while the first
    // still runs. That claim comes a whole lease after the fire time on the store clock and finds
    // the run's in-flight record: it is that run's recovery — attempt 2, a higher token (claim.ts,
    // lateDeadRun) — and the first run's keep-alive fails and aborts its signal. Before
    // 2026-11-27 it ran as attempt 1 again, a duplicate no checker could tell from a bug.
    for (const [fireTime, count] of countByFireTime(runs)) {
      if (fireTime !== runningAtStep.fireTime) {
        expect(count, `fire time ${new Date(fireTime).toISOString()}`).toBe(1);
        continue;
      }
      expect(count).toBeLessThanOrEqual(2);
      const [first, second] = runs.filter((r) => r.fireTime === fireTime);
      if (second) {
        expect(second.attempt).toBe(first!.attempt + 1);
        expect(second.token).toBeGreaterThan(first!.token);
      }
    }
    expect(errors).toEqual([]);
  }, 30_000);
});

describe('100 scheduler instances starting at once on one PostgreSQL store (herd)', () => {
  const pg = serverBackend('postgres');
  it.skipIf(pg.skip !== undefined)(
    'start-up completes, each fire time runs exactly once, no error events',
    async () => {
      const prefix = testPrefix('herd');
      // 10 stores (pg pools of at most 10 connections: ≤ 100 connections), 10 schedulers on each.
      stores.push(await openStore(pg.url!, { prefix }));
      stores.push(...(await Promise.all(Array.from({ length: 9 }, () => openStore(pg.url!, { prefix })))));
      const runs: Run[] = [];
      const errors: { during: string; error: unknown }[] = [];
      const herd = Array.from({ length: 100 }, (_, i) => {
        const node = `n${i}`;
        const s = createScheduler({ store: stores[i % 10]!, node, pollInterval: '1s' });
        s.define('herd', { every: '1s', lockAtMostFor: '5s' }, (ctx: JobContext) => {
          runs.push({
            node,
            fireTime: ctx.fireTime.getTime(),
            token: ctx.token,
            attempt: ctx.attempt,
            seq: runs.length,
          });
        });
        s.on('error', (e) => errors.push(e));
        return s;
      });
      live.push(...herd);
      const started = performance.now();
      await Promise.all(herd.map((s) => s.start()));
      const startMs = performance.now() - started;
      expect(startMs).toBeLessThan(20_000);
      const from = (await stores[0]!.now()) + 1_000;
      await sleep(4_500);
      const to = from + 3_000;
      const window = runs.filter((r) => r.fireTime >= from && r.fireTime < to);
      const counts = countByFireTime(runs);
      const expected = Array.from({ length: 3 }, (_, i) => Math.ceil(from / 1000) * 1000 + i * 1000);
      console.log(
        `herd: 100 schedulers started in ${Math.round(startMs)} ms; ${runs.length} runs by ${new Set(runs.map((r) => r.node)).size} nodes; errors ${errors.length}`,
      );
      for (const fireTime of expected) expect(counts.get(fireTime), new Date(fireTime).toISOString()).toBe(1);
      for (const [fireTime, count] of counts) expect(count, new Date(fireTime).toISOString()).toBe(1);
      expect(window.length).toBeGreaterThanOrEqual(3);
      expect(errors.map((e) => `${e.during}: ${String(e.error)}`)).toEqual([]);
    },
    60_000,
  );
});

describe('two versions of a job definition live at once (rolling deploy, memory store)', () => {
  it('every 1 s (v1) and every 2 s (v2) under one name: each fire time at most once, the last definition is recorded', async () => {
    const space = `deploy-${randomId(6)}`;
    const runs: Run[] = [];
    const errors: unknown[] = [];
    const node = (name: string, version: string, every: string, lockAtMostFor: string) => {
      const store = new MemoryStore({ space });
      const s = createScheduler({ store, node: name, pollInterval: '100ms' });
      s.define('report', { every, lockAtMostFor }, (ctx: JobContext) => {
        runs.push({
          node: name,
          version,
          fireTime: ctx.fireTime.getTime(),
          token: ctx.token,
          attempt: ctx.attempt,
          seq: runs.length,
        });
      });
      s.on('error', (e) => errors.push(e));
      live.push(s);
      return s;
    };
    const v1 = node('old', 'v1', '1s', '3s');
    await v1.start();
    const v2 = node('new', 'v2', '2s', '5s');
    await v2.start(); // records its definition after v1's
    const from = Math.ceil(Date.now() / 1000) * 1000 + 1_000;
    await sleep(4_500);
    const window = runs.filter((r) => r.fireTime >= from && r.fireTime < from + 3_000);
    for (const [fireTime, count] of countByFireTime(runs))
      expect(count, new Date(fireTime).toISOString()).toBe(1);
    // Odd seconds are v1's fire times only: run by v1. Each second of the window ran (once).
    for (const r of runs) if ((r.fireTime / 1000) % 2 === 1) expect(r.version).toBe('v1');
    expect(window.map((r) => r.fireTime).sort()).toEqual([from, from + 1_000, from + 2_000]);
    expect(errors).toEqual([]);
    const [job] = await v1.jobs();
    expect(job).toMatchObject({
      name: 'report',
      trigger: { every: '2s' },
      options: { lockAtMostForMs: 5_000 },
    });
    expect(job!.nodes.sort()).toEqual(['new', 'old']);
  }, 30_000);
});
