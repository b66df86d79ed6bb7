/**
 * Jittered stored schedules claimed ahead of their start (due/due-entry.ts CLAIM_AHEAD_MS,
 * claim/page-claims.ts): fire times that come due one by one go in pages of everything due within
 * the next seconds, and each run starts at its own start — never before it, each once, also when
 * the node that claimed them ahead dies before their start. Judged from the outside (the runs, the
 * history a user reads, the history checker) on the memory store, in one process: a node "dies"
 * when every store call of its stops answering.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../src/index.js';
import { compileJitter, scheduledAt } from '../src/schedule/jitter.js';
import { decodePageRecord } from '../src/scheduler/claim/page-record.js';
import { keys } from '../src/scheduler/keys.js';
import type { JobContext } from '../src/scheduler/types.js';
import type { PageClaim, Store, WriteOp } from '../src/store/types.js';
import { eventually, faulty } from './harness/faulty-store.js';
import { checkedHistory, pageNode, sleep, stopNodes, unique } from './harness/page-kit.js';
import { until } from './harness/scheduler-suite.js';

const INTERVAL = 4_000;
const JITTER = '3s';

afterEach(stopNodes);
const scheduler = (store: Store, node: string) => pageNode(store, node, 200);

/** The start every node computes for schedule `id`'s fire time `fireTime` (every 4 s, jitter 3 s). */
function expectedStart(job: string, id: string, fireTime: number): number {
  const jitter = compileJitter(JITTER, undefined, 'test');
  return scheduledAt(jitter, job, id, fireTime, fireTime + INTERVAL);
}

/** The first fire time of `every: 4s` at or after `t`. */
const firstFire = (t: number) => Math.ceil(t / INTERVAL) * INTERVAL;

describe('jittered stored schedules claimed ahead', () => {
  it('go in pages of many, and each run starts once, at its own start, never before it', async () => {
    const base = await openStore(`memory:${unique('ahead')}`);
    const st = faulty(base);
    const job = unique('ahead');
    const s = scheduler(st, unique('n'));
    const ran: { ctx: JobContext; at: number }[] = [];
    s.define(job, {}, async (ctx) => {
      ran.push({ ctx, at: await base.now() });
    });
    const n = 120;
    const from = firstFire((await base.now()) + 500);
    await s.schedules.upsert(
      Array.from({ length: n }, (_, i) => ({ id: `u${i}`, job, every: '4s', jitter: JITTER, startAt: from })),
    );
    await s.start();
    await until(() => ran.length >= n, 15_000, 'the first fire time of every schedule');
    await s.stop();
    const first = ran.filter((r) => r.ctx.fireTime.getTime() === from);
    expect(new Set(first.map((r) => r.ctx.scheduleId)).size).toBe(n);
    const keysRun = ran.map((r) => `${r.ctx.scheduleId}@${r.ctx.fireTime.getTime()}`);
    expect(new Set(keysRun).size).toBe(keysRun.length);
    for (const r of ran) {
      const at = expectedStart(job, r.ctx.scheduleId!, r.ctx.fireTime.getTime());
      expect(r.ctx.scheduledAt.getTime()).toBe(at);
      // On the store's clock (this store is this host's clock).
      expect(r.at).toBeGreaterThanOrEqual(at);
    }
    // Spread over 3 s, they were claimed a few pages at a time, not one page each.
    const pages = st.faults.calls.filter((c) => c.method === 'claimPage').length;
    expect(pages).toBeLessThan(ran.length / 10);
    const history = await checkedHistory(s, job, 30_000);
    for (const e of history.filter((x) => x.status === 'succeeded'))
      expect(e.startedAt.getTime()).toBeGreaterThanOrEqual(e.scheduledAt!.getTime());
  }, 30_000);

  it('a node dying before the start of runs it claimed ahead: another node runs each once (attempt 2, higher token), not before its start', async () => {
    const base = await openStore(`memory:${unique('ahead-kill')}`);
    const a = faulty(base);
    const job = unique('ahead-kill');
    const na = scheduler(a, 'node-a');
    na.define(job, { lockAtMostFor: '1s' }, () => {});
    const n = 60;
    const from = firstFire((await base.now()) + 500);
    // Node a dies as the start of its first page with a run more than 500 ms ahead is stored:
    // those runs are claimed and on record as started, and never ran.
    let diedWith: string[] = [];
    let tokenA = 0;
    a.faults.after = (method, _args, result) => {
      if (method === 'claimPage') tokenA = Math.max(tokenA, (result as PageClaim).lease?.token ?? 0);
    };
    a.faults.dieAfter = (method, args) => {
      if (method !== 'apply') return false;
      const put = (args[0] as WriteOp[]).find(
        (o) => o.op === 'put' && o.key.startsWith('ctl|page|') && o.value.includes('"started"'),
      );
      if (put?.op !== 'put') return false;
      const record = decodePageRecord(put.value);
      if (!record.items.some((i) => (i.at ?? i.fireTime) - Date.now() > 500)) return false;
      diedWith = record.items.map((i) => i.id);
      return true;
    };
    await na.schedules.upsert(
      Array.from({ length: n }, (_, i) => ({ id: `u${i}`, job, every: '4s', jitter: JITTER, startAt: from })),
    );
    await na.start();
    await until(() => a.faults.dead, 10_000, 'node a to claim runs ahead and die');
    expect(diedWith.length).toBeGreaterThan(0);
    const nb = scheduler(base, 'node-b');
    const ranB: { ctx: JobContext; at: number }[] = [];
    nb.define(job, { lockAtMostFor: '1s' }, async (ctx) => {
      ranB.push({ ctx, at: await base.now() });
    });
    await nb.start();
    const firstOnB = () => ranB.filter((r) => r.ctx.fireTime.getTime() === from);
    await until(
      () => diedWith.every((id) => firstOnB().some((r) => r.ctx.scheduleId === id)),
      15_000,
      'node b to recover the runs node a claimed ahead',
    );
    // Every first fire time has started (the last within 3 s of `from`), on a or b.
    while ((await base.now()) < from + 3_500) await sleep(50);
    await sleep(300);
    await nb.stop();
    for (const id of diedWith) {
      const runs = firstOnB().filter((r) => r.ctx.scheduleId === id);
      expect(runs, id).toHaveLength(1);
      expect(runs[0]!.ctx.attempt).toBe(2);
      expect(runs[0]!.ctx.token).toBeGreaterThan(tokenA);
    }
    for (const r of ranB) expect(r.at).toBeGreaterThanOrEqual(r.ctx.scheduledAt.getTime());
    const history = await checkedHistory(nb, job, 1_000);
    // Each first fire time succeeded exactly once, on a or b; attempt 1 of each run node a claimed
    // ahead and never started is on record abandoned.
    const succeeded = history.filter((e) => e.status === 'succeeded' && e.fireTime.getTime() === from);
    expect(succeeded.map((e) => e.scheduleId).sort()).toEqual(
      Array.from({ length: n }, (_, i) => `u${i}`).sort(),
    );
    const abandoned = history.filter((e) => e.status === 'abandoned').map((e) => e.scheduleId!);
    for (const id of diedWith) expect(abandoned).toContain(id);
    await eventually(
      async () => (await base.scan(keys.pageRecordPrefix(job))).length === 0,
      5_000,
      'pages to end',
    );
  }, 40_000);
});
