/**
 * `scheduler.history()` across jobs is an exact k-way merge: the same answer as reading every
 * record and sorting (fire time desc, then history key desc), running attempts merged in, pages
 * by cursor disjoint and consecutive, and it reads O(limit + jobs × small page) records, not
 * jobs × limit.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  createScheduler,
  type HistoryEntry,
  historyCursor,
  OncelyError,
  openStore,
  type Store,
  type WriteOp,
} from '../src/index.js';
import { encodeHistory } from '../src/scheduler/finish/history.js';
import { keys, type OccurrenceId } from '../src/scheduler/keys.js';
import { compareKeys } from '../src/store/validate.js';

const T0 = Date.UTC(2024, 4, 1);
/** Job names that stress the key order: a prefix of another, escaped `|` and `%`, non-ASCII. */
const JOBS = ['a', 'ab', 'a|b', '50%', 'zeta', 'émoji-😀', 'Z', 'plain'];

const stores: Store[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

async function memoryStore(): Promise<Store> {
  const store = await openStore('memory:');
  stores.push(store);
  return store;
}

/** A deterministic PRNG (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Seeded {
  finished: HistoryEntry[];
  running: HistoryEntry[];
}

function keyOf(e: HistoryEntry): string {
  return keys.history(
    { job: e.job, scheduleId: e.scheduleId, fireTime: e.fireTime.getTime(), shard: e.shard },
    e.attempt,
  );
}

async function write(store: Store, ops: WriteOp[]): Promise<void> {
  for (let i = 0; i < ops.length; i += 1000) await store.apply(ops.slice(i, i + 1000));
}

/**
 * Random history: few distinct fire times (many ties), schedules, shards up to 12 (keys hold them
 * unpadded: '10' < '2'), several attempts; in-flight records for some finished attempts (a run that
 * just ended) and some not, one of a job with no job record.
 */
async function seed(store: Store, rnd: () => number, count: number): Promise<Seeded> {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const ops: WriteOp[] = JOBS.map((job) => ({
    op: 'put',
    key: keys.job(job),
    value: JSON.stringify({ name: job }),
  }));
  const finished = new Map<string, HistoryEntry>();
  for (let i = 0; i < count; i++) {
    const entry: HistoryEntry = {
      job: pick(JOBS),
      fireTime: new Date(T0 + Math.floor(rnd() * 40) * 60_000),
      node: 'n1',
      attempt: 1 + Math.floor(rnd() * 3),
      token: i + 1,
      source: 'schedule',
      status: pick(['succeeded', 'failed', 'timed-out'] as const),
      startedAt: new Date(T0),
      finishedAt: new Date(T0 + 5),
      ...(rnd() < 0.4 && { scheduleId: pick(['s1', 's2', 'manual:x', 'ü|%']) }),
      ...(rnd() < 0.4 && { shard: Math.floor(rnd() * 13) }),
    };
    finished.set(keyOf(entry), entry);
  }
  for (const [key, e] of finished) ops.push({ op: 'put', key, value: encodeHistory(e) });
  const running: HistoryEntry[] = [];
  const inflight = (e: HistoryEntry) => {
    const occ: OccurrenceId = {
      job: e.job,
      scheduleId: e.scheduleId,
      fireTime: e.fireTime.getTime(),
      shard: e.shard,
    };
    const rec = {
      job: e.job,
      fireTime: e.fireTime.getTime(),
      attempt: e.attempt,
      token: e.token,
      node: 'n2',
      source: e.source,
      startedAt: T0,
      claimedAt: T0,
      leaseMs: 60_000,
      ...(e.scheduleId !== undefined && { scheduleId: e.scheduleId }),
      ...(e.shard !== undefined && { shard: e.shard }),
    };
    ops.push({ op: 'put', key: keys.inflight(occ), value: JSON.stringify(rec) });
    running.push({ ...e, node: 'n2', status: 'running', startedAt: new Date(T0) });
  };
  const list = [...finished.values()];
  for (let i = 0; i < 6; i++) inflight(list[Math.floor(rnd() * list.length)]!);
  for (let i = 0; i < 6; i++)
    inflight({ ...list[Math.floor(rnd() * list.length)]!, attempt: 9, token: 10_000 + i });
  inflight({ ...list[0]!, job: 'gone-job', fireTime: new Date(T0 + 7 * 60_000) });
  // One in-flight record per occurrence: the last write per key wins, as in the store.
  await write(store, ops);
  const occ = (r: HistoryEntry): OccurrenceId => ({
    job: r.job,
    scheduleId: r.scheduleId,
    fireTime: r.fireTime.getTime(),
    shard: r.shard,
  });
  const byKey = new Map(running.map((r) => [keys.inflight(occ(r)), r]));
  return { finished: list, running: [...byKey.values()] };
}

/** Everything, read the slow way: finished records win over a running twin; newest first. */
function bruteForce(data: Seeded, job?: string): HistoryEntry[] {
  const finished = data.finished.filter((e) => job === undefined || e.job === job);
  const known = new Set(finished.map(keyOf));
  const running = data.running.filter((e) => (job === undefined || e.job === job) && !known.has(keyOf(e)));
  return [...finished, ...running].sort(
    (a, b) => b.fireTime.getTime() - a.fireTime.getTime() || compareKeys(keyOf(b), keyOf(a)),
  );
}

function entriesAfter(all: HistoryEntry[], before: Date | HistoryEntry | undefined): HistoryEntry[] {
  if (before === undefined) return all;
  if (before instanceof Date) return all.filter((e) => e.fireTime.getTime() < before.getTime());
  return all.slice(all.findIndex((e) => keyOf(e) === keyOf(before)) + 1);
}

const ids = (es: HistoryEntry[]) => es.map((e) => `${keyOf(e)} ${e.status}`);

describe('history across jobs: exact merge', () => {
  it('equals a brute-force sort for any limit, time bound and cursor, per job and across jobs', async () => {
    for (const s of [1, 2, 3]) {
      const store = await memoryStore();
      const rnd = random(s);
      const data = await seed(store, rnd, 400);
      const scheduler = createScheduler({ store });
      for (const job of [undefined, 'a', 'émoji-😀', 'gone-job']) {
        const all = bruteForce(data, job);
        expect(all.length).toBeGreaterThan(0);
        for (const limit of [1, 3, 10, 37, 1000]) {
          const q = { limit, ...(job !== undefined && { job }) };
          expect(ids(await scheduler.history(q)), `seed ${s} job ${job} limit ${limit}`).toEqual(
            ids(all.slice(0, limit)),
          );
          const at = all[Math.floor(rnd() * all.length)]!;
          for (const before of [at.fireTime, at]) {
            const got = await scheduler.history({
              ...q,
              before: before instanceof Date ? before : historyCursor(before),
            });
            expect(ids(got), `seed ${s} job ${job} limit ${limit} before ${keyOf(at)}`).toEqual(
              ids(entriesAfter(all, before).slice(0, limit)),
            );
          }
          const ms = await scheduler.history({ ...q, before: at.fireTime.getTime() });
          expect(ids(ms)).toEqual(ids(entriesAfter(all, at.fireTime).slice(0, limit)));
        }
      }
    }
  }, 60_000);

  it('pages by cursor: disjoint, consecutive, together everything', async () => {
    const store = await memoryStore();
    const data = await seed(store, random(42), 500);
    const scheduler = createScheduler({ store });
    const all = bruteForce(data);
    for (const limit of [1, 7, 50]) {
      const pages: HistoryEntry[][] = [];
      let before: string | undefined;
      // Bounded, so a cursor that does not advance fails instead of looping.
      for (let n = 0; n <= all.length; n++) {
        const page = await scheduler.history({ limit, ...(before !== undefined && { before }) });
        if (page.length === 0) break;
        expect(page.length).toBeLessThanOrEqual(limit);
        pages.push(page);
        before = historyCursor(page.at(-1)!);
      }
      expect(ids(pages.flat()), `limit ${limit}`).toEqual(ids(all));
      expect(new Set(pages.flat().map(keyOf)).size).toBe(all.length);
    }
  }, 60_000);

  it('refuses a bad limit or before with INVALID_ARGUMENT', async () => {
    const scheduler = createScheduler({ store: await memoryStore() });
    for (const bad of [
      { limit: 0 },
      { limit: 1.5 },
      { before: 'not-a-cursor' },
      { before: Buffer.from('hist|x|1|||0001').toString('base64url') },
      { before: Number.NaN },
      { before: new Date('nope') },
    ]) {
      const err = await scheduler.history(bad).catch((e: unknown) => e);
      expect(err, JSON.stringify(bad)).toBeInstanceOf(OncelyError);
      expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
    }
  });
});

describe('history across jobs: bounded reads', () => {
  /** The store, counting scan calls and the records they return. */
  function counting(store: Store) {
    const count = { scans: 0, records: 0 };
    const wrapped = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'scan')
          return async (...args: Parameters<Store['scan']>) => {
            const records = await target.scan(...args);
            count.scans++;
            count.records += records.length;
            return records;
          };
        const value = Reflect.get(target, prop, receiver) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return { store: wrapped, count };
  }

  /** 50 jobs × 1,000 finished runs each, every job firing every minute; `hot` jobs' runs are all newer than the rest. */
  async function fleet(hot: ReadonlySet<number> = new Set()): Promise<Store> {
    const store = await memoryStore();
    const ops: WriteOp[] = [];
    for (let j = 0; j < 50; j++) {
      const job = `job-${String(j).padStart(2, '0')}`;
      ops.push({ op: 'put', key: keys.job(job), value: '{}' });
      const newest = hot.has(j) ? T0 + 10_000_000 : T0;
      const step = hot.has(j) ? 1_000 : 60_000;
      for (let i = 0; i < 1000; i++) {
        const e: HistoryEntry = {
          job,
          fireTime: new Date(newest - i * step + j),
          node: 'n',
          attempt: 1,
          token: i,
          source: 'schedule',
          status: 'succeeded',
          startedAt: new Date(T0),
        };
        ops.push({ op: 'put', key: keyOf(e), value: encodeHistory(e) });
      }
    }
    await write(store, ops);
    return store;
  }

  it('reads O(limit + jobs × page) records, not jobs × limit', async () => {
    const { store, count } = counting(await fleet());
    const scheduler = createScheduler({ store });
    const page = await scheduler.history({ limit: 500 });
    expect(page).toHaveLength(500);
    expect(page[0]!.job).toBe('job-49');
    // 50 job records + 50 first pages of max(10, 2 × 500 / 50) = 20 + the in-flight scans (runs
    // claimed on their own, and pages).
    expect(count.records).toBeLessThanOrEqual(50 + 50 * 20);
    expect(count.scans).toBeLessThanOrEqual(53);
    // One job at a time: one page.
    const before = { ...count };
    expect(await scheduler.history({ job: 'job-07', limit: 100 })).toHaveLength(100);
    expect(count.records - before.records).toBe(100);
  }, 60_000);

  it('a job that fills most of the page is read in doubling pages, never beyond the limit', async () => {
    const { store, count } = counting(await fleet(new Set([3])));
    const scheduler = createScheduler({ store });
    const page = await scheduler.history({ limit: 500 });
    expect(page.every((e) => e.job === 'job-03')).toBe(true);
    // Cold jobs: their first page of 20. The hot job: pages 20, 40, 80, … capped by what is still needed.
    expect(count.records).toBeLessThanOrEqual(50 + 49 * 20 + 500);
    expect(count.scans).toBeLessThanOrEqual(53 + 6);
  }, 60_000);
});
