/**
 * Stored schedules at scale: the due index (due-index.ts, due-entry.ts) and the schedules API
 * (schedules.ts). Memory store for the behaviour, SQLite for the 100,001-schedule cases.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { OncelyError } from '../src/core/errors.js';
import { randomId } from '../src/core/ids.js';
import { openStore } from '../src/index.js';
import { createScheduler, type Scheduler } from '../src/scheduler/index.js';
import { keys } from '../src/scheduler/keys.js';
import type { JobContext, SchedulerOptions } from '../src/scheduler/types.js';
import type { Store } from '../src/store/types.js';
import { type RecordedEvents, recordEvents } from './harness/events.js';
import { until } from './harness/scheduler-suite.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-schedules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const unique = (label: string) => `${label}-${randomId(5)}`;

/** A store whose calls (and rows read by scan/getMany) are counted; `hang(method)` makes calls never answer from then on. */
interface Counted extends Store {
  stats: {
    calls: { method: string; args: unknown[] }[];
    rows: number;
    hangAfter?: (method: string, args: unknown[]) => boolean;
    dead: boolean;
  };
}
function counted(store: Store): Counted {
  const stats: Counted['stats'] = { calls: [], rows: 0, dead: false };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'stats') return stats;
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'close') return value;
      return async (...args: unknown[]) => {
        if (stats.dead) return new Promise(() => {});
        stats.calls.push({ method: String(prop), args });
        const result = await (value as (...a: unknown[]) => unknown).apply(target, args);
        if ((prop === 'scan' || prop === 'getMany') && Array.isArray(result)) stats.rows += result.length;
        if (stats.hangAfter?.(String(prop), args)) stats.dead = true;
        return result;
      };
    },
  }) as Counted;
}

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  // A node whose store never answers (the dead node) is left behind after 2 s.
  for (const c of cleanup.splice(0).reverse()) await Promise.race([c().catch(() => {}), sleep(2_000)]);
});

async function memory(): Promise<Counted> {
  const s = counted(await openStore(`memory:${unique('sch')}`));
  return s;
}
let sqliteN = 0;
async function sqlite(): Promise<Counted> {
  const s = counted(await openStore(`sqlite:${join(dir, `s${sqliteN++}.db`)}`));
  cleanup.push(() => s.close());
  return s;
}
function share(store: Store): Promise<Counted> {
  return Promise.resolve(counted(store));
}

interface Node {
  s: Scheduler;
  runs: JobContext[];
  events: RecordedEvents;
}
function node(store: Store, options: Partial<SchedulerOptions> = {}): Node {
  const s = createScheduler({ store, node: unique('n'), pollInterval: '200ms', ...options });
  cleanup.push(() => s.stop());
  return { s, runs: [], events: recordEvents(s) };
}
function define(n: Node, job: string, options: Parameters<Scheduler['define']>[1] = {}): Node {
  n.s.define(job, options, (ctx) => {
    n.runs.push(ctx);
  });
  return n;
}
const ids = (runs: JobContext[]) => runs.map((r) => r.scheduleId);

/** `st` with its scans of `prefix` counted: calls as they are made, rows as they come back. */
function scansOf(st: Store, prefix: string): { store: Store; tally: { calls: number; rows: number } } {
  const tally = { calls: 0, rows: 0 };
  const store = new Proxy(st, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== 'scan') return value;
      return async (p: string, opts: unknown) => {
        if (p === prefix) tally.calls++;
        const rows = await (value as Store['scan']).call(target, p, opts as never);
        if (p === prefix) tally.rows += rows.length;
        return rows;
      };
    },
  }) as Store;
  return { store, tally };
}

describe('schedules API', () => {
  it('validates every entry first: index and field named, nothing written', async () => {
    const st = await memory();
    const { s } = node(st);
    const job = unique('v');
    const good = { id: 'a', job, every: '1m' };
    const cases: [unknown, RegExp][] = [
      [{ id: 'b', job, cron: 'nope' }, /entry 1: cron/],
      [{ id: '', job, every: '1m' }, /entry 1: id/],
      [{ id: 'b', job: '', every: '1m' }, /entry 1: job/],
      [{ id: 'b', job }, /entry 1: cron \| every \| at/],
      [{ id: 'b', job, every: '1m', colour: 'red' }, /entry 1: colour/],
      [{ id: 'b', job, every: '1m', data: { n: 10n } }, /entry 1: data/],
    ];
    for (const [bad, message] of cases) {
      const err = await s.schedules.upsert([good, bad as never]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OncelyError);
      expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
      expect((err as Error).message).toMatch(message);
    }
    expect(await s.schedules.count()).toBe(0);
    expect(await st.count('')).toBe(0);
    await expect(s.schedules.list({ limit: 1001 })).rejects.toThrow(/1000/);
  });

  it('get and remove are one lookup each (remove: plus one write)', async () => {
    const st = await memory();
    const { s } = node(st);
    const job = unique('g');
    await s.schedules.upsert({ id: 'x|%y', job, every: '1m', data: { a: 1 } });
    st.stats.calls.length = 0;
    expect(await s.schedules.get('x|%y')).toEqual({ id: 'x|%y', job, every: '1m', data: { a: 1 } });
    // One lookup: the schedule and its pause record (schedules.pause) in one getMany.
    expect(st.stats.calls.map((c) => c.method)).toEqual(['getMany']);
    st.stats.calls.length = 0;
    expect(await s.schedules.remove('x|%y', 'ignored')).toBe(true);
    // The store clock is read beside the lookup: the time of the removal's audit entry.
    expect(st.stats.calls.map((c) => c.method)).toEqual(['get', 'now', 'apply']);
    expect(await s.schedules.get('x|%y')).toBeUndefined();
    expect(await s.schedules.remove('x|%y')).toBe(false);
    expect(await s.schedules.count({ job })).toBe(0);
  });

  it('a schedule moved to another job counts and lists under the new job only', async () => {
    const st = await memory();
    const { s } = node(st);
    const [a, b] = [unique('from'), unique('to')];
    await s.schedules.upsert([
      { id: 'moving', job: a, every: '1m' },
      { id: 'staying', job: a, every: '1m' },
    ]);
    await s.schedules.upsert({ id: 'moving', job: b, every: '1m' });
    expect(await s.schedules.count({ job: a })).toBe(1);
    expect(await s.schedules.count({ job: b })).toBe(1);
    expect((await s.schedules.list({ job: a })).map((x) => x.id)).toEqual(['staying']);
    expect((await s.schedules.list({ job: b })).map((x) => x.id)).toEqual(['moving']);
    expect(await s.schedules.count()).toBe(2);
  });

  it('a moved schedule written another way (job not second in its JSON) still leaves its old job', async () => {
    const st = await memory();
    const { s } = node(st);
    const [a, b] = [unique('from'), unique('to')];
    // As an older writer might have stored it: the same record, keys in another order.
    const oddRecord = () =>
      st.apply([
        {
          op: 'put',
          key: keys.schedule('odd'),
          value: JSON.stringify({ job: a, id: 'odd', every: '1m', v: 'x' }),
        },
        { op: 'put', key: keys.scheduleOfJob(a, 'odd'), value: '' },
      ]);
    await oddRecord();
    await s.schedules.upsert([{ id: 'odd', job: a, every: '2m' }]);
    expect(await s.schedules.count({ job: a })).toBe(1);
    await oddRecord();
    await s.schedules.upsert([{ id: 'odd', job: b, every: '1m' }]);
    expect(await s.schedules.count({ job: a })).toBe(0);
    expect((await s.schedules.list({ job: b })).map((x) => x.id)).toEqual(['odd']);
    // Upserted twice to one job: still one index entry, and a fresh version each time.
    const version = async () => (JSON.parse((await st.get(keys.schedule('odd')))!) as { v: string }).v;
    const before = await version();
    await s.schedules.upsert({ id: 'odd', job: b, every: '1m' });
    expect(await version()).not.toBe(before);
    expect(await s.schedules.count({ job: b })).toBe(1);
  });

  it('100,001 schedules in one call: count, paging without duplicates, the last still runs (SQLite)', async () => {
    const st = await sqlite();
    const job = unique('bulk');
    const n = define(node(st), job);
    const N = Number(process.env.BULK_N ?? 100_001);
    // The last id fires every second (an `at` could pass while a loaded machine writes 100,001).
    const list = Array.from({ length: N }, (_, i) => ({
      id: `u${String(i).padStart(6, '0')}`,
      job,
      ...(i === N - 1 ? { every: '1s' } : { cron: '0 0 1 1 *' }),
    }));
    st.stats.calls.length = 0;
    await n.s.schedules.upsert(list);
    const applies = st.stats.calls.filter((c) => c.method === 'apply');
    // Two per 332 new schedules (each with its audit entry, in the same apply), and the change
    // signal once after them (not in every batch).
    expect(applies.length).toBe(2 * Math.floor(N / 332) + Math.ceil((N % 332) / 166) + 1);
    expect(applies.every((c) => (c.args[0] as unknown[]).length <= 1000)).toBe(true);
    expect(await n.s.schedules.count()).toBe(N);
    expect(await n.s.schedules.count({ job })).toBe(N);
    const seen = new Set<string>();
    let pages = 0;
    for (let page = await n.s.schedules.list({ job, limit: 1000 }); page.length > 0; pages++) {
      for (const s of page) seen.add(s.id);
      page = await n.s.schedules.list({ job, limit: 1000, after: page.at(-1)!.id });
    }
    expect(seen.size).toBe(N);
    expect(pages).toBe(Math.ceil(N / 1000));
    await n.s.start();
    await until(() => n.runs.length > 0, 10_000, 'the last schedule to run');
    const run = n.runs[0]!;
    expect(run.scheduleId).toBe(`u${String(N - 1).padStart(6, '0')}`);
    expect(run.fireTime.getTime() % 1000).toBe(0);
  }, 120_000);

  it('an idle node with 100,000 stored schedules: at most 2 store calls/s, few rows (SQLite)', async () => {
    const st = await sqlite();
    const job = unique('idle');
    const n = define(node(st, { pollInterval: '1s' }), job);
    await n.s.schedules.upsert(
      Array.from({ length: 100_000 }, (_, i) => ({ id: `i${i}`, job, cron: '0 0 1 1 *' })),
    );
    await n.s.start();
    await sleep(1_500);
    st.stats.calls.length = 0;
    st.stats.rows = 0;
    const seconds = 6;
    await sleep(seconds * 1000);
    const perSecond = st.stats.calls.length / seconds;
    const rowsPerSecond = st.stats.rows / seconds;
    console.log(
      `idle, 100,000 stored: ${perSecond.toFixed(2)} calls/s, ${rowsPerSecond.toFixed(1)} rows/s`,
      st.stats.calls.map((c) => c.method).join(' '),
    );
    expect(perSecond).toBeLessThanOrEqual(2);
    expect(rowsPerSecond).toBeLessThanOrEqual(1000);
    expect(n.runs).toEqual([]);
  }, 120_000);
});

describe('running stored schedules from the due index', () => {
  it('re-upsert with another trigger: the old fire time does not run, the new one does', async () => {
    const st = await memory();
    const job = unique('re');
    const n = define(node(st), job);
    await n.s.start();
    const now = await st.now();
    await n.s.schedules.upsert({ id: 'r', job, at: now + 1_000 });
    await n.s.schedules.upsert({ id: 'r', job, at: now + 2_000, data: 2 });
    await until(() => n.runs.length > 0, 5_000, 'the new fire time');
    await sleep(500);
    expect(n.runs.map((r) => [r.fireTime.getTime(), r.data])).toEqual([[now + 2_000, 2]]);
    // The stale entry was dropped when met.
    expect(await st.count(keys.duePrefix)).toBe(0);
  });

  it('remove: never runs again; a change reaches every node within one poll', async () => {
    const st = await memory();
    const job = unique('rm');
    const nodes = [node(await share(st)), node(await share(st))].map((x) => define(x, job));
    await Promise.all(nodes.map((x) => x.s.start()));
    const writer = createScheduler({ store: st, node: unique('w') });
    const scans = (x: Node) =>
      (x.s as unknown as { store: Counted }).store.stats.calls.filter(
        (c) => c.method === 'scan' && c.args[0] === keys.duePrefix,
      ).length;
    const before = nodes.map(scans);
    await writer.schedules.upsert({ id: 'e', job, every: '300ms' });
    await sleep(300); // one poll (200 ms) and a little
    expect(nodes.map(scans).every((n, i) => n > before[i]!)).toBe(true);
    const all = () => nodes.flatMap((x) => x.runs);
    await until(() => all().length >= 3, 5_000, 'three runs');
    await writer.schedules.remove('e');
    const removedAt = await st.now();
    await sleep(1_000);
    const late = all().filter((r) => r.fireTime.getTime() > removedAt + 250);
    expect(late).toEqual([]);
    const times = all().map((r) => r.fireTime.getTime());
    expect(new Set(times).size).toBe(times.length);
  });

  it('claimed but never started: another node runs the fire time after the lease', async () => {
    const shared = await openStore(`memory:${unique('dead')}`);
    const job = unique('dead');
    const a = counted(shared);
    // Node a dies right after the claim that granted the stored schedule's occurrence: the page
    // claim that moved its due entry (on a store with pages), or the acquire of its lease.
    a.stats.hangAfter = (method, args) =>
      (method === 'claimPage' && (args[0] as { key: string }).key.startsWith(`page|${job}|`)) ||
      (method === 'acquire' && (args[0] as { key: string }[]).some((r) => r.key.startsWith(`occ|${job}|d|`)));
    const na = define(node(a), job, { lockAtMostFor: '1s', misfireThreshold: '10s' });
    const writer = createScheduler({ store: shared, node: unique('w') });
    const F = (await shared.now()) + 500;
    await writer.schedules.upsert({ id: 'd', job, at: F });
    await na.s.start();
    await until(() => a.stats.dead, 5_000, 'node a to claim and die');
    const nb = define(node(shared), job);
    await nb.s.start();
    // b's claim is refused while a's lease holds; b looks again after the entry's back-off (up to
    // 10 s between looks), so the fire time runs within the lease plus one back-off.
    await until(() => nb.runs.length > 0, 30_000, 'node b to run it');
    expect(nb.runs.map((r) => [r.scheduleId, r.fireTime.getTime(), r.attempt])).toEqual([['d', F, 1]]);
    // Recovered from the page's record as a claim that never started (a fresh token, attempt 1).
    expect(a.stats.calls.some((c) => c.method === 'claimPage')).toBe(shared.capabilities.pages);
    expect(na.runs).toEqual([]);
    cleanup.splice(
      cleanup.findIndex(() => true),
      1,
    ); // node a never answers stop(): leave it
  }, 45_000);

  // 10 s back, and 3 h back: an entry further behind than the done hold (1 h) must still be
  // claimed and moved on (its claim is judged from the read, not from its fire time).
  for (const [misfire, back] of [
    ['skip', 10],
    ['run-once', 10],
    ['catch-up', 10],
    ['skip', 10_800],
    ['run-once', 10_800],
    ['catch-up', 10_800],
  ] as const) {
    it(`misfire ${misfire} per stored schedule: an entry ${back} fire times in the past`, async () => {
      const st = await memory();
      const job = unique(misfire);
      const writer = createScheduler({ store: st, node: unique('w') });
      await writer.schedules.upsert({ id: 'm', job, every: '1s' });
      // Move the entry `back` seconds back, as a cluster that was down for that long would have left it.
      const [entry] = await st.scan(keys.duePrefix);
      const v = entry!.key.split('|')[3]!;
      const now = await st.now();
      const F = (Math.floor(now / 1000) - back) * 1000;
      await st.apply([
        { op: 'delete', key: entry!.key },
        { op: 'put', key: keys.dueEntry(F, 'm', v), value: entry!.value },
      ]);
      const n = define(node(st), job, { misfire, catchUpLimit: 3, misfireThreshold: '500ms' });
      await n.s.start();
      await until(() => n.runs.some((r) => r.fireTime.getTime() > now + 1000), 6_000, 'an on-time run');
      await n.s.stop();
      const missed = n.runs.filter((r) => r.fireTime.getTime() < now - 500);
      const onTime = n.runs.filter((r) => r.fireTime.getTime() > now);
      expect(onTime.length).toBeGreaterThan(0);
      const times = n.runs.map((r) => r.fireTime.getTime());
      expect(new Set(times).size).toBe(times.length);
      const skipped = n.events.misfired.filter((e) => e.action === 'skipped');
      const latestMissed = (Math.ceil((now - 500) / 1000) - 1) * 1000;
      if (misfire === 'skip') {
        expect(missed).toEqual([]);
        expect(skipped).toHaveLength(1);
        expect(skipped[0]!.firstFireTime.getTime()).toBe(F);
        expect(skipped[0]!.count).toBe((latestMissed - F) / 1000 + 1);
      } else if (misfire === 'run-once') {
        expect(missed.map((r) => r.fireTime.getTime())).toEqual([latestMissed]);
        expect(skipped[0]!.count).toBe((latestMissed - F) / 1000);
      } else {
        expect(missed.map((r) => r.fireTime.getTime())).toEqual([
          latestMissed - 2000,
          latestMissed - 1000,
          latestMissed,
        ]);
        expect(skipped[0]!.count).toBe((latestMissed - F) / 1000 + 1 - 3);
      }
      expect(ids(n.runs).every((id) => id === 'm')).toBe(true);
    }, 20_000);
  }

  it('2 nodes × 5,000 schedules due at one instant: each runs exactly once', async () => {
    const st = await memory();
    const job = unique('burst');
    const nodes = [node(await share(st), { concurrency: 500 }), node(await share(st), { concurrency: 500 })];
    for (const x of nodes) define(x, job);
    const at = (await st.now()) + 2_000;
    await nodes[0]!.s.schedules.upsert(Array.from({ length: 5_000 }, (_, i) => ({ id: `b${i}`, job, at })));
    await Promise.all(nodes.map((x) => x.s.start()));
    const all = () => nodes.flatMap((x) => x.runs);
    await until(() => all().length >= 5_000, 60_000, '5,000 runs');
    await sleep(1_000);
    const seen = ids(all());
    expect(seen).toHaveLength(5_000);
    expect(new Set(seen).size).toBe(5_000);
    expect(await st.count(keys.duePrefix)).toBe(0);
  }, 90_000);

  /** Due rows one node reads for 3,000 one-shots of a job with `options` due at once (concurrency 100). */
  async function dueRowsOfFanOut(options: Parameters<Scheduler['define']>[1]): Promise<number> {
    const st = await memory();
    const { store: scanning, tally } = scansOf(st, keys.duePrefix);
    const job = unique('rows');
    const n = define(node(scanning, { concurrency: 100 }), job, options);
    const at = (await st.now()) + 1_500;
    await n.s.schedules.upsert(Array.from({ length: 3_000 }, (_, i) => ({ id: `r${i}`, job, at })));
    await n.s.start();
    await until(() => n.runs.length >= 3_000, 60_000, '3,000 runs');
    expect(new Set(ids(n.runs)).size).toBe(3_000);
    return tally.rows;
  }

  it('a fan-out reads about one due row per occurrence, not a page of 1,000 per read', async () => {
    // Each read wants as many entries as the node has free slots (here at most 100) and stops at
    // the entry that fills them: its pages are sized to that, not PAGE. With pages of 1,000 the
    // rest of each page was read and thrown away: 4.2 rows per occurrence in a fan-out of 100,000
    // at concurrency 256 on PostgreSQL, 8.9 here (26,844 rows).
    const dueRows = await dueRowsOfFanOut({});
    // Idle reads before and after the fan-out add a first page (64) each.
    expect(dueRows, `${dueRows} due rows read`).toBeLessThan(3_000 * 1.6 + 20 * 64);
  }, 90_000);

  it("the same under a rate limit above the fan-out's pace: entries waiting for slots hold the reads back", async () => {
    // A limited job's entries waiting for permits do not hold the node's due reads back (other
    // jobs' schedules would wait behind a backlog of minutes); those of a job granted all it
    // asked for wait for slots like any other's. Before, every tick read the index again past
    // them: 47,376 rows for these 3,000 (3,876 now; bench:scale --variant rate: ~280,000 rows
    // per node instead of ~90,000).
    const dueRows = await dueRowsOfFanOut({ rateLimit: { max: 100_000, per: '1s' } });
    expect(dueRows, `${dueRows} due rows read`).toBeLessThan(3_000 * 1.6 + 20 * 64);
  }, 90_000);

  it('a full node that frees slots does not read every control record each time (no control work waiting)', async () => {
    // A node that was full and frees a slot polls at once only when its last poll saw control
    // work waiting for a slot (trigger requests, queued runs, backfill requests): a fan-out
    // frees slots every few hundred ms, and each such poll read all of `ctl|` for nothing.
    const st = await memory();
    const { store: counting, tally } = scansOf(st, keys.controlPrefix);
    const job = unique('full');
    const n = node(counting, { concurrency: 10, pollInterval: '1s' });
    // On time however late the machine runs them: a misfire replay's end polls at once (what is
    // queued behind it may start), which a loaded CI run turned 1 of 300 runs in 1.1 s into.
    n.s.define(job, { misfireThreshold: '1h' }, async (ctx) => {
      n.runs.push(ctx);
      await sleep(30);
    });
    const at = (await st.now()) + 1_500;
    await n.s.schedules.upsert(Array.from({ length: 300 }, (_, i) => ({ id: `f${i}`, job, at })));
    await n.s.start();
    await until(() => n.runs.length >= 1, 30_000, 'the first run');
    const before = tally.calls;
    const t0 = performance.now();
    await until(() => n.runs.length >= 300, 60_000, '300 runs');
    const seconds = (performance.now() - t0) / 1000;
    expect(new Set(ids(n.runs)).size).toBe(300);
    // About one read per poll interval; not one per freed slot (226 in 0.9 s before).
    const reads = tally.calls - before;
    expect(reads, `${reads} control reads in ${seconds.toFixed(1)} s`).toBeLessThanOrEqual(
      Math.ceil(seconds) * 3 + 10,
    );
  }, 90_000);

  it("pages answered after the poll's knowledge went stale read the job's backfill records once, not each", async () => {
    // A page looks for backfill work of its schedules (claim/gated-runs.ts) in what the node's
    // last poll read; answered more than STALE_KNOWLEDGE_MS (2.5 s) after that read, it reads the
    // job's requests and in-flight records again — every such page did, two scans each, though
    // the pages of one tick are answered together. Here each claim is answered 3 s late.
    const st = await memory();
    const job = unique('gk');
    let pages = 0;
    let bfScans = 0;
    const slow = new Proxy(st, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop === 'claimPage')
          return async (...args: unknown[]) => {
            const out = await (value as (...a: unknown[]) => unknown).apply(target, args);
            pages++;
            await sleep(3_000);
            return out;
          };
        if (prop === 'scan')
          return async (prefix: string, opts: unknown) => {
            if (prefix === `ctl|bf|${job}|`) bfScans++;
            return (value as Store['scan']).call(target, prefix, opts as never);
          };
        return value;
      },
    }) as Store;
    const n = define(node(slow, { concurrency: 3_000 }), job);
    const at = (await st.now()) + 1_500;
    await n.s.schedules.upsert(Array.from({ length: 2_500 }, (_, i) => ({ id: `g${i}`, job, at })));
    await n.s.start();
    await until(() => n.runs.length >= 2_500, 60_000, '2,500 runs');
    expect(new Set(ids(n.runs)).size).toBe(2_500);
    expect(pages, 'pages claimed').toBeGreaterThanOrEqual(3);
    expect(bfScans, `${bfScans} reads of the job's backfill requests for ${pages} pages`).toBeLessThan(pages);
  }, 90_000);
});
