/**
 * Spreading work over the live nodes (spread.ts): shard items by average allocation, occurrences
 * due together by rendezvous hashing, takeover after the grace, shard failover after SIGKILL.
 * Memory store for nodes in this process; SQLite and PostgreSQL for nodes in processes of their own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { hash32 } from '../src/core/hash.js';
import { randomId } from '../src/core/ids.js';
import { openStore } from '../src/index.js';
import { SPREAD_GRACE_MS, Spread, spreadGrace } from '../src/scheduler/control/spread.js';
import { createScheduler, type JobOptions, type Scheduler } from '../src/scheduler/index.js';
import { keys } from '../src/scheduler/keys.js';
import type { NodeState } from '../src/scheduler/node-state.js';
import type { Store } from '../src/store/types.js';
import { expectedOccurrences } from '../src/testing/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { spawnTsx } from './harness/child.js';
import { expectHistoryHolds, runsFromLines } from './harness/history.js';
import { until } from './harness/scheduler-suite.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-spread-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const unique = (label: string) => `${label}-${randomId(5)}`;
/** A node's job map as Spread.self reads it (only the names count). */
const jobMap = (...names: string[]) => new Map(names.map((n) => [n, undefined]));

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  // A node whose store never answers is left behind after 2 s.
  for (const c of cleanup.splice(0).reverse()) await Promise.race([c().catch(() => {}), sleep(2_000)]);
});

interface Run {
  node: string;
  fireTime: number;
  shard: number | undefined;
  scheduleId: string | undefined;
  startedAt: number;
}

/** A store whose calls never answer once `dead` is set (a node that froze or was killed). */
function killable(store: Store): Store & { dead: boolean } {
  const box = { dead: false };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'dead') return box.dead;
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        box.dead ? new Promise(() => {}) : (value as (...a: unknown[]) => unknown).apply(target, args);
    },
    set(_target, prop, value) {
      if (prop !== 'dead') return false;
      box.dead = value as boolean;
      return true;
    },
  }) as Store & { dead: boolean };
}

function nodes(
  store: Store | (() => Store),
  count: number,
  define: (s: Scheduler, runs: Run[]) => void,
  options: { concurrency?: number } = {},
): { list: Scheduler[]; runs: Run[] } {
  const runs: Run[] = [];
  const list = Array.from({ length: count }, (_, i) => {
    const s = createScheduler({
      store: typeof store === 'function' ? store() : store,
      node: `n${i}-${randomId(4)}`,
      pollInterval: '200ms',
      ...options,
    });
    define(s, runs);
    cleanup.push(() => s.stop());
    return s;
  });
  return { list, runs };
}

async function untilAsync(condition: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

/** Waits until no trigger request is left (consumed once every item is on record), then a grace more. */
async function consumedAndSettled(store: Store): Promise<void> {
  await untilAsync(
    async () => (await store.scan(keys.triggerPrefix)).length === 0,
    10_000,
    'requests consumed',
  );
  await sleep(SPREAD_GRACE_MS + 500);
}

const spreadOf = (s: Scheduler) => (s as unknown as { state: NodeState }).state.spread;

/** Waits until every node's live list for `job` has `count` nodes. */
async function allLive(list: Scheduler[], job: string, count: number): Promise<void> {
  await until(
    () => list.every((s) => spreadOf(s).eligible(job)?.length === count),
    15_000,
    `every node sees ${count} live nodes`,
  );
}

const recorder =
  (s: Scheduler, runs: Run[]) =>
  (ctx: { fireTime: Date; shard?: { index: number }; scheduleId?: string }): void => {
    runs.push({
      node: s.node,
      fireTime: ctx.fireTime.getTime(),
      shard: ctx.shard?.index,
      scheduleId: ctx.scheduleId,
      startedAt: Date.now(),
    });
  };

/** 4 nodes on one memory store, each through its own `killable` view of it (set `dead` to freeze one). */
async function freezableNodes(job: string, options: JobOptions) {
  const base = await openStore(`memory:${unique('spread')}`);
  const stores: (Store & { dead: boolean })[] = [];
  const { list, runs } = nodes(
    () => {
      const st = killable(base);
      stores.push(st);
      return st;
    },
    4,
    (s, runs) => s.define(job, options, recorder(s, runs)),
  );
  return { base, stores, list, runs };
}

function noneTwice(runs: Run[]): void {
  const seen = new Map<string, number>();
  for (const r of runs) {
    const k = `${r.scheduleId ?? ''}|${r.fireTime}|${r.shard ?? ''}`;
    seen.set(k, (seen.get(k) ?? 0) + 1);
  }
  expect([...seen].filter(([, n]) => n > 1)).toEqual([]);
}

describe('spread: preference', () => {
  const occ = (fireTime: number, shard?: number) => ({ job: 'j', scheduleId: undefined, fireTime, shard });
  const beats = (ids: string[], now: number) =>
    ids.map((id) => ({
      key: `node|${id}`,
      value: JSON.stringify({ id, lastSeen: now, jobs: ['j'], beatMs: 1000 }),
    }));

  it('every node computes the same preferred node; shard items 8 on 4 nodes give exactly 2 each', () => {
    const ids = ['a', 'b', 'c', 'd'];
    const views = ids.map((id) => {
      const sp = new Spread(id);
      sp.self(jobMap('j'), false);
      sp.update(beats(ids, 0) as never, 0);
      return sp;
    });
    for (let t = 0; t < 50; t++) {
      const fireTime = 1_700_000_000_000 + t * 1000;
      const prefs = views.map((v) => v.preferred(occ(fireTime)));
      expect(new Set(prefs).size).toBe(1);
      const items = Array.from({ length: 8 }, (_, i) => views[0]!.preferred(occ(fireTime, i), 8));
      for (const id of ids) expect(items.filter((x) => x === id)).toHaveLength(2);
      for (const v of views)
        expect(Array.from({ length: 8 }, (_, i) => v.preferred(occ(fireTime, i), 8))).toEqual(items);
      // Exactly one node claims at once; the others after the grace.
      const at = views.map((v) => v.claimableAt(occ(fireTime), undefined, SPREAD_GRACE_MS));
      expect(at.filter((x) => x === fireTime)).toHaveLength(1);
      expect(at.filter((x) => x === fireTime + SPREAD_GRACE_MS)).toHaveLength(3);
    }
  });

  it('the rendezvous weight of a node is hash32(`<node>\\0<job>|<schedule>|<fireTime>`): the same preferred node as that string would give', () => {
    // Kept exactly: nodes of different versions in one cluster must agree, and the simulator's
    // recorded seeds replay the same claims only with the same preferences.
    const ids = ['node-a', 'b', 'ünï|code', 'a-much-longer-node-id-with-a-host-name.example.org'];
    const sp = new Spread('b');
    sp.self(jobMap('j', 'k'), false);
    sp.update(
      ids.map((id) => ({
        key: `node|${id}`,
        value: JSON.stringify({ id, lastSeen: 0, jobs: ['j', 'k'], beatMs: 1000 }),
      })) as never,
      0,
    );
    const eligible = [...ids].sort();
    for (let t = 0; t < 500; t++) {
      const o = {
        job: t % 2 ? 'j' : 'k',
        scheduleId: t % 3 ? `s${t}` : undefined,
        fireTime: 1_700_000_000_000 + t * 997,
      };
      const key = `${o.job}|${o.scheduleId ?? ''}|${o.fireTime}`;
      let best = '';
      let bestWeight = -1;
      for (const id of eligible) {
        const w = hash32(`${id}\u0000${key}`);
        if (w > bestWeight) {
          best = id;
          bestWeight = w;
        }
      }
      expect(sp.preferred({ ...o, shard: undefined })).toBe(best);
    }
  });

  it('eligibility follows a change of the jobs another node defines, and survives reads that change nothing', () => {
    const sp = new Spread('a');
    sp.self(jobMap('j', 'k'), false);
    const read = (jobsOfB: string[], now: number) =>
      sp.update(
        [
          {
            key: 'node|a',
            value: JSON.stringify({ id: 'a', lastSeen: now, jobs: ['j', 'k'], beatMs: 1000 }),
          },
          { key: 'node|b', value: JSON.stringify({ id: 'b', lastSeen: now, jobs: jobsOfB, beatMs: 1000 }) },
        ] as never,
        now,
      );
    expect(read(['j'], 0)).toBe(true);
    expect(sp.eligible('j')).toEqual(['a', 'b']);
    expect(sp.eligible('k')).toEqual(['a']);
    // The same list again (a later beat): unchanged.
    expect(read(['j'], 1000)).toBe(false);
    expect(sp.eligible('j')).toEqual(['a', 'b']);
    expect(sp.eligible('k')).toEqual(['a']);
    // b now defines k too, and no longer j.
    expect(read(['k'], 2000)).toBe(true);
    expect(sp.eligible('j')).toEqual(['a']);
    expect(sp.eligible('k')).toEqual(['a', 'b']);
    // This node stops defining k: only b is left for it.
    sp.self(jobMap('j'), false);
    expect(sp.eligible('k')).toEqual(['b']);
  });

  it('grace: a quarter of the gap to the next fire time, at most 1 s', () => {
    expect(spreadGrace(undefined)).toBe(SPREAD_GRACE_MS);
    expect(spreadGrace(86_400_000)).toBe(SPREAD_GRACE_MS);
    expect(spreadGrace(4_000)).toBe(1_000);
    expect(spreadGrace(1_000)).toBe(250);
    expect(spreadGrace(20)).toBe(5);
  });

  it('rendezvous: occurrences spread evenly; a leave moves only the leaver’s share; stale or stopping nodes are not live', () => {
    const sp = new Spread('a');
    sp.self(jobMap('j'), false);
    sp.update(beats(['a', 'b', 'c', 'd'], 0) as never, 0);
    const counts = new Map<string, number>();
    const before: string[] = [];
    for (let t = 0; t < 4000; t++) {
      const p = sp.preferred({ job: 'j', scheduleId: `s${t}`, fireTime: 0, shard: undefined })!;
      before.push(p);
      counts.set(p, (counts.get(p) ?? 0) + 1);
    }
    for (const n of counts.values()) expect(n).toBeGreaterThan(850);
    // d stops heartbeating: only d's occurrences move.
    const beatsLater = beats(['b', 'c'], 10_000).concat(beats(['d'], 0));
    sp.update(beatsLater as never, 10_000);
    expect(sp.eligible('j')).toEqual(['a', 'b', 'c']);
    for (let t = 0; t < 4000; t++) {
      const p = sp.preferred({ job: 'j', scheduleId: `s${t}`, fireTime: 0, shard: undefined })!;
      if (before[t] !== 'd') expect(p).toBe(before[t]);
    }
    sp.update(
      [
        ...beats(['b'], 0),
        { key: 'node|c', value: JSON.stringify({ id: 'c', lastSeen: 0, jobs: ['j'], stopping: true }) },
        { key: 'node|x', value: JSON.stringify({ id: 'x', lastSeen: 0, jobs: ['other'] }) },
      ] as never,
      0,
    );
    expect(sp.eligible('j')).toEqual(['a', 'b']);
    expect(hash32('x')).toBe(hash32('x'));
  });
});

describe('spread: nodes in one process (memory store)', () => {
  it('8 shard items on 4 live nodes: every node runs exactly 2 items of each occurrence, none twice', async () => {
    const store = await openStore(`memory:${unique('spread')}`);
    const job = unique('shards');
    const { list, runs } = nodes(store, 4, (s, runs) =>
      s.define(job, { every: '1s', shards: 8, overlap: 'allow' }, recorder(s, runs)),
    );
    await Promise.all(list.map((s) => s.start()));
    await allLive(list, job, 4);
    const from = Date.now() + 1000;
    const fireTimes = () => [...new Set(runs.filter((r) => r.fireTime > from).map((r) => r.fireTime))].sort();
    await until(
      () => fireTimes().length >= 5 && runs.filter((r) => r.fireTime === fireTimes()[3]).length === 8,
      20_000,
      '4 whole occurrences',
    );
    await sleep(SPREAD_GRACE_MS + 500);
    noneTwice(runs);
    for (const f of fireTimes().slice(0, 4)) {
      const of = runs.filter((r) => r.fireTime === f);
      expect(of.map((r) => r.shard).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      const per = list.map((s) => of.filter((r) => r.node === s.node).length);
      expect(per, `fire time ${f}`).toEqual([2, 2, 2, 2]);
    }
  }, 40_000);

  it('nodes started one after another all see each other at their next poll, not a heartbeat (5 s) later', async () => {
    const store = await openStore(`memory:${unique('spread')}`);
    const job = unique('join');
    const list = Array.from({ length: 3 }, (_, i) => {
      const s = createScheduler({ store, node: `s${i}-${randomId(4)}` }); // poll 1 s: heartbeat every 5 s
      s.define(job, { every: '1h' }, () => {});
      cleanup.push(() => s.stop());
      return s;
    });
    const t0 = Date.now();
    // The first node's first poll (inside start) reads the heartbeats before the others wrote theirs.
    for (const s of list) await s.start();
    // (Its next poll comes a second after the first: checked only if the starts took less.)
    if (Date.now() - t0 < 900) expect(spreadOf(list[0]!).eligible(job)).toHaveLength(1);
    await allLive(list, job, 3);
    // Before 2026-11-28 the first node kept its list of one until its next heartbeat, 5 s after it
    // started, and claimed every occurrence due meanwhile at the fire time (spread.ts).
    expect(Date.now() - t0).toBeLessThan(4_000);
  }, 20_000);

  it('after the grace a node does not claim what another node already runs or ran: one claim per occurrence', async () => {
    const base = await openStore(`memory:${unique('spread')}`);
    const job = unique('claims');
    let requests = 0;
    let counting = false;
    const countingStore = (): Store =>
      new Proxy(base, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver);
          if (prop !== 'acquire' || typeof value !== 'function') return value;
          return (batch: unknown[]) => {
            if (counting) requests += batch.length;
            return (value as (b: unknown[]) => unknown).call(target, batch);
          };
        },
      });
    const starts: string[] = [];
    const { list } = nodes(
      countingStore,
      3,
      (s) => {
        for (let j = 0; j < 30; j++)
          s.define(`${job}-${j}`, { every: '2s', overlap: 'allow' }, (ctx) => {
            starts.push(`${ctx.job}@${ctx.fireTime.getTime()}`);
          });
      },
      { concurrency: 100 },
    );
    await Promise.all(list.map((s) => s.start()));
    for (let j = 0; j < 30; j++) await allLive(list, `${job}-${j}`, 3);
    // One whole fire time: from 200 ms before it until well past the grace (500 ms for 2 s).
    const fire = Math.ceil((Date.now() + 1500) / 2000) * 2000;
    await sleep(fire - 200 - Date.now());
    counting = true;
    await sleep(200 + 1500);
    counting = false;
    const ran = starts.filter((k) => k.endsWith(`@${fire}`));
    expect(ran).toHaveLength(30);
    expect(new Set(ran).size).toBe(30);
    // Each of the 30 occurrences is claimed once, by its preferred node (30 here); a node that
    // lags past the grace on a loaded machine may leave a few to the others (so ≤ 50). Before
    // 2026-11-28 every node also claimed the other nodes' shares after the grace, blindly: 90.
    console.log(`lease requests for one fire time of 30 jobs on 3 nodes: ${requests}`);
    expect(requests).toBeLessThanOrEqual(50);
  }, 30_000);

  it('400 stored schedules due at one instant: each of 4 nodes runs a fair share, none twice, none missing', async () => {
    const store = await openStore(`memory:${unique('spread')}`);
    const job = unique('due');
    const { list, runs } = nodes(store, 4, (s, runs) => s.define(job, {}, recorder(s, runs)), {
      concurrency: 100,
    });
    await Promise.all(list.map((s) => s.start()));
    await allLive(list, job, 4);
    const at = new Date(Math.ceil((Date.now() + 2500) / 1000) * 1000);
    await list[0]!.schedules.upsert(Array.from({ length: 400 }, (_, i) => ({ id: `u${i}`, job, at })));
    await until(() => runs.length >= 400, 20_000, '400 runs');
    await sleep(SPREAD_GRACE_MS + 1000);
    expect(runs).toHaveLength(400);
    noneTwice(runs);
    expect(new Set(runs.map((r) => r.scheduleId)).size).toBe(400);
    const shares = list.map((s) => runs.filter((r) => r.node === s.node).length / 400);
    console.log(`shares of 400 due together: ${shares.map((x) => `${Math.round(x * 100)}%`).join(' ')}`);
    for (const x of shares) {
      expect(x).toBeGreaterThanOrEqual(0.15);
      expect(x).toBeLessThanOrEqual(0.4);
    }
    // Each ran its own share on time: nothing waited for a grace.
    const late = runs.filter((r) => r.startedAt - r.fireTime >= SPREAD_GRACE_MS);
    expect(late.length).toBeLessThan(40);
  }, 40_000);

  it('trigger() of a job with 8 shard items on 4 live nodes: 2 items each, none twice; the request is consumed', async () => {
    const store = await openStore(`memory:${unique('spread')}`);
    const job = unique('manual');
    const { list, runs } = nodes(store, 4, (s, runs) =>
      s.define(job, { shards: 8, overlap: 'allow' }, recorder(s, runs)),
    );
    await Promise.all(list.map((s) => s.start()));
    await allLive(list, job, 4);
    for (let n = 1; n <= 3; n++) {
      await list[n % 4]!.trigger(job);
      await until(() => runs.length === 8 * n, 10_000, `the 8 items of trigger ${n}`);
    }
    // Consumed once every item is on record (within a poll or two after the grace).
    await consumedAndSettled(store);
    noneTwice(runs);
    expect(runs).toHaveLength(24);
    for (const id of new Set(runs.map((r) => r.scheduleId))) {
      const of = runs.filter((r) => r.scheduleId === id);
      expect(of.map((r) => r.shard).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(
        list.map((s) => of.filter((r) => r.node === s.node).length),
        `request ${id}`,
      ).toEqual([2, 2, 2, 2]);
      // Each node ran its own items at once, not after the grace.
      expect(of.filter((r) => r.startedAt - r.fireTime >= SPREAD_GRACE_MS)).toEqual([]);
    }
  }, 40_000);

  it('trigger() with a frozen node: its items run elsewhere after the grace, none twice, none missing', async () => {
    const job = unique('manual-frozen');
    const { base, stores, list, runs } = await freezableNodes(job, { shards: 8, overlap: 'allow' });
    await Promise.all(list.map((s) => s.start()));
    await allLive(list, job, 4);
    const victim = list[3]!;
    stores[3]!.dead = true;
    await list[0]!.trigger(job);
    await until(() => runs.length === 8, 10_000, 'all 8 items');
    await consumedAndSettled(base);
    noneTwice(runs);
    expect(runs.map((r) => r.shard).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(runs.some((r) => r.node === victim.node)).toBe(false);
    // The victim's two items waited for the grace; the others' ran at once.
    expect(
      runs.filter((r) => r.startedAt - r.fireTime >= SPREAD_GRACE_MS - 50).length,
    ).toBeGreaterThanOrEqual(2);
  }, 40_000);

  it('a node that froze: its shard items are taken over after the grace, none twice, none missing', async () => {
    const job = unique('frozen');
    const { stores, list, runs } = await freezableNodes(job, { every: '1s', shards: 8, overlap: 'allow' });
    // A quarter of the 1 s interval: 250 ms.
    const grace = spreadGrace(1_000);
    await Promise.all(list.map((s) => s.start()));
    await allLive(list, job, 4);
    const victim = list[3]!;
    stores[3]!.dead = true;
    const killedAt = Date.now();
    const sinceKill = () =>
      [...new Set(runs.filter((r) => r.fireTime > killedAt).map((r) => r.fireTime))].sort();
    // The survivors drop the victim from their live list once its heartbeat is stale (~3 s).
    await until(() => list.slice(0, 3).every((s) => spreadOf(s).eligible(job)?.length === 3), 15_000, 'drop');
    const dropped = Date.now();
    await until(
      () => runs.some((r) => r.fireTime > dropped + 1000) && sinceKill().length >= 6,
      20_000,
      'occurrences after the freeze',
    );
    await sleep(grace + 1500);
    noneTwice(runs);
    const fires = sinceKill().slice(0, -1);
    for (const f of fires) {
      const of = runs.filter((r) => r.fireTime === f);
      expect(of.map((r) => r.shard).sort(), `fire time ${f}`).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(of.some((r) => r.node === victim.node)).toBe(false);
    }
    // While the victim still looked live, its items ran after the grace; once dropped, at once.
    // (A quarter of the items were the victim's: after the drop, only a loaded machine makes one late.)
    const takenOver = runs.filter((r) => r.fireTime > killedAt && r.fireTime < dropped - 1000);
    expect(takenOver.some((r) => r.startedAt - r.fireTime >= grace)).toBe(true);
    const settled = runs.filter((r) => r.fireTime > dropped + 1000);
    expect(settled.filter((r) => r.startedAt - r.fireTime >= grace).length).toBeLessThan(
      settled.length * 0.1,
    );
  }, 60_000);

  it('a stopping node hands its share over without a grace', async () => {
    const store = await openStore(`memory:${unique('spread')}`);
    const job = unique('stop');
    const { list, runs } = nodes(store, 3, (s, runs) =>
      s.define(job, { every: '1s', shards: 6, overlap: 'allow' }, recorder(s, runs)),
    );
    await Promise.all(list.map((s) => s.start()));
    await allLive(list, job, 3);
    await list[2]!.stop();
    await until(() => list.slice(0, 2).every((s) => spreadOf(s).eligible(job)?.length === 2), 10_000, 'drop');
    const from = Date.now() + 1000;
    await until(() => runs.filter((r) => r.fireTime > from).length >= 18, 15_000, '3 occurrences');
    await sleep(SPREAD_GRACE_MS);
    noneTwice(runs);
    const later = runs.filter((r) => r.fireTime > from);
    for (const s of list.slice(0, 2)) {
      const f = later[0]!.fireTime;
      expect(later.filter((r) => r.fireTime === f && r.node === s.node)).toHaveLength(3);
    }
  }, 40_000);
});

describe('spread: nodes in processes of their own (SQLite)', () => {
  const script = fileURLToPath(new URL('./fixtures/shard-node.ts', import.meta.url));
  interface Line {
    event: 'live' | 'start' | 'succeeded';
    node?: string;
    count?: number;
    fireTime?: number;
    shard?: number;
    attempt?: number;
    token?: number;
  }
  const start = (url: string, id: string, job: string, hang: boolean) => {
    const lines: Line[] = [];
    const child = spawnTsx(script, [url, 'sp_', id, job, hang ? 'hang' : 'no'], (line) => {
      if (line.startsWith('{')) lines.push(JSON.parse(line) as Line);
    });
    return { id, lines, child };
  };

  it('shard items of a node SIGKILLed mid-run are recovered by another node with a higher token; none twice', async () => {
    const url = `sqlite:${join(dir, 'failover.db')}`;
    const job = unique('failover');
    const survivor = start(url, `${job}-a`, job, false);
    const victim = start(url, `${job}-v`, job, true);
    const all = [survivor, victim];
    try {
      const live = (c: typeof survivor) => c.lines.filter((l) => l.event === 'live').at(-1)?.count;
      await until(() => all.every((c) => live(c) === 2), 60_000, `both live${victim.child.stderr()}`);
      // The victim's first runs after both saw each other: 2 of the 4 items, which then hang.
      const seenAt = Date.now();
      const victimStarts = () =>
        victim.lines.filter((l) => l.event === 'start' && l.fireTime! > seenAt + 500);
      await until(() => victimStarts().length >= 2, 20_000, 'the victim starts its items');
      const killed = victimStarts()[0]!.fireTime!;
      const ownItems = victimStarts().filter((l) => l.fireTime === killed);
      expect(ownItems).toHaveLength(2);
      victim.child.process.kill('SIGKILL');
      // Every item the victim started (and left hanging) is recovered by the survivor.
      const hung = victim.lines.filter((l) => l.event === 'start');
      const recovered = () =>
        hung.every((h) =>
          survivor.lines.some(
            (l) =>
              l.event === 'succeeded' && l.fireTime === h.fireTime && l.shard === h.shard && l.attempt === 2,
          ),
        );
      await until(recovered, 30_000, `recovery${survivor.child.stderr()}`);
      // Later occurrences: all 4 items on the survivor (after the grace while the victim looked live).
      await until(
        () =>
          survivor.lines.filter((l) => l.event === 'succeeded' && l.fireTime! > killed + 4000).length >= 4,
        30_000,
        'later occurrences',
      );
      const starts = all.flatMap((c) => c.lines).filter((l) => l.event === 'start');
      const byItem = new Map<string, Line[]>();
      for (const l of starts) {
        const k = `${l.fireTime}|${l.shard}`;
        byItem.set(k, [...(byItem.get(k) ?? []), l]);
      }
      for (const [item, ls] of byItem) {
        ls.sort((x, y) => x.attempt! - y.attempt!);
        if (ls[0]!.node === victim.id) {
          // The killed attempt and its recovery: attempt 2 on the survivor, with a higher token.
          expect(ls.map((l) => [l.node, l.attempt])).toEqual([
            [victim.id, 1],
            [survivor.id, 2],
          ]);
          expect(ls[1]!.token).toBeGreaterThan(ls[0]!.token!);
        } else {
          expect(ls, `item ${item}`).toHaveLength(1);
        }
      }
      const of = (f: number) => starts.filter((l) => l.fireTime === f).map((l) => l.shard);
      expect(new Set(of(killed))).toEqual(new Set([0, 1, 2, 3]));
      // The history checker: no duplicate, growing tokens, and every shard item of every fire
      // time from the killed one to the last one seen started (or was skipped on record).
      const { records, skips } = runsFromLines(all.flatMap((c) => c.lines));
      const last = Math.max(...starts.map((l) => l.fireTime!));
      const checked = expectHistoryHolds({
        records,
        skips,
        jobs: [{ job, leaseMs: 2000 }],
        expected: expectedOccurrences(job, { every: '2s' }, { from: killed, to: last - 2000, shards: 4 }),
      });
      expect(checked.recoveries).toBe(hung.length);
    } finally {
      for (const c of all) if (c.child.process.exitCode === null) c.child.process.kill('SIGKILL');
    }
  }, 120_000);
});

describe('spread: 4 node processes on PostgreSQL', () => {
  const postgres = serverBackend('postgres');
  const script = fileURLToPath(new URL('./fixtures/spread-node.ts', import.meta.url));
  interface Line {
    event: 'live' | 'start';
    count?: number;
    node?: string;
    scheduleId?: string;
    fireTime?: number;
    startedAt?: number;
  }

  it.skipIf(postgres.skip !== undefined)(
    '400 stored schedules due at one instant: each process runs a fair share on time, none twice, none missing',
    async () => {
      const prefix = testPrefix('spread4');
      const job = unique('fair');
      const procs = ['a', 'b', 'c', 'd'].map((id) => {
        const lines: Line[] = [];
        const child = spawnTsx(script, [postgres.url!, prefix, `${job}-${id}`, job], (line) => {
          if (line.startsWith('{')) lines.push(JSON.parse(line) as Line);
        });
        return { id: `${job}-${id}`, lines, child };
      });
      const store = await openStore(postgres.url!, { prefix });
      try {
        const live = (p: (typeof procs)[number]) => p.lines.filter((l) => l.event === 'live').at(-1)?.count;
        await until(() => procs.every((p) => live(p) === 4), 60_000, 'all 4 see each other');
        const at = new Date(Math.ceil((Date.now() + 3000) / 1000) * 1000);
        await createScheduler({ store }).schedules.upsert(
          Array.from({ length: 400 }, (_, i) => ({ id: `u${i}`, job, at })),
        );
        const starts = () => procs.flatMap((p) => p.lines.filter((l) => l.event === 'start'));
        await until(() => starts().length >= 400, 30_000, '400 runs');
        await sleep(SPREAD_GRACE_MS + 1000);
        const all = starts();
        expect(all).toHaveLength(400);
        expect(new Set(all.map((l) => l.scheduleId)).size).toBe(400);
        const shares = procs.map((p) => all.filter((l) => l.node === p.id).length / 400);
        console.log(
          `shares of 400 due together, 4 processes: ${shares.map((x) => `${Math.round(x * 100)}%`).join(' ')}`,
        );
        for (const x of shares) {
          expect(x).toBeGreaterThanOrEqual(0.15);
          expect(x).toBeLessThanOrEqual(0.4);
        }
        // Each took its own share at the fire time: most started before any takeover grace was
        // over. Not "few": four tsx processes on a busy 2-core CI machine, and one of them stalled
        // past the grace leaves up to its whole share (~100) to a takeover — full CI runs saw 52
        // and 74 of 400. Had the nodes not claimed their own shares at the fire time, all would be.
        const late = all.filter((l) => l.startedAt! - l.fireTime! >= SPREAD_GRACE_MS);
        expect(late.length).toBeLessThan(120);
        // The history checker: each of the 400 occurrences started once, none lost.
        const checked = expectHistoryHolds({
          ...runsFromLines(procs.flatMap((p) => p.lines)),
          jobs: [{ job, leaseMs: 30_000 }],
          expected: Array.from({ length: 400 }, (_, i) => ({
            job,
            scheduleId: `u${i}`,
            fireTime: at.getTime(),
          })),
        });
        expect(checked.occurrences).toBe(400);
      } finally {
        for (const p of procs) if (p.child.process.exitCode === null) p.child.process.kill('SIGKILL');
        await store.close();
      }
    },
    120_000,
  );
});
