/**
 * The scheduler never stalls silently, and the races found in review stay fixed: work that does
 * not fit in the free slots (a backlog, more shards than slots), outages longer than any
 * enumeration cap, misfire reports that stay one per job and tick, start/stop ordering, store
 * blips while a claim is settled, a pause racing a poll, a broken stored schedule.
 *
 * Memory store; long outages are made by an old high-water mark (what a node finds after one),
 * store blips and slow polls by a store wrapper, loops counted by an injected clock.
 */

import { afterEach, describe, expect, it } from 'vitest';
import { CliLog } from '../src/cli/log.js';
import { attachRunLog } from '../src/cli/run-log.js';
import { type Clock, systemClock } from '../src/core/clock.js';
import { OncelyError } from '../src/core/errors.js';
import { randomId } from '../src/core/ids.js';
import { openStore } from '../src/index.js';
import { encodeHistory } from '../src/scheduler/finish/history.js';
import { createScheduler, type Scheduler } from '../src/scheduler/index.js';
import { keys } from '../src/scheduler/keys.js';
import type { RunEvent, SchedulerEvents, SchedulerOptions } from '../src/scheduler/types.js';
import type { Store, StoredRecord, WriteOp } from '../src/store/types.js';
import { testPrefix } from './harness/backends.js';
import { recordEvents } from './harness/events.js';
import { until } from './harness/scheduler-suite.js';

const space = `memory:${testPrefix('stall')}`;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const unique = (label: string) => `${label}-${randomId(5)}`;

/** A store whose next `apply` matching `failApply` rejects once, and whose poll scans can be held. */
interface Wrapped extends Store {
  ctl: {
    failApply?: ((ops: readonly WriteOp[]) => boolean) | undefined;
    failed: WriteOp[][];
    /** While set, a scan of the control records reads the store, then waits for `release()`. */
    holdScans: boolean;
    /** Likewise, once, for the first scan of the control records whose result this accepts. */
    holdIf?: ((records: readonly StoredRecord[]) => boolean) | undefined;
    held: Promise<void>;
    release: () => void;
    onPut?: ((key: string) => void) | undefined;
  };
}

function wrap(store: Store): Wrapped {
  let heldNow = () => {};
  let releaseNow = () => {};
  const ctl: Wrapped['ctl'] = {
    failed: [],
    holdScans: false,
    held: new Promise<void>((r) => {
      heldNow = r;
    }),
    release: () => releaseNow(),
  };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'ctl') return ctl;
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const call = (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, args);
      if (prop === 'apply')
        return (ops: readonly WriteOp[]) => {
          if (ctl.failApply?.(ops)) {
            ctl.failApply = undefined;
            ctl.failed.push([...ops]);
            return Promise.reject(new OncelyError('STORE_UNAVAILABLE', 'simulated blip: apply'));
          }
          // A put inside a batch counts as a put (start() records its jobs in apply batches).
          for (const op of ops) if (op.op === 'put') ctl.onPut?.(op.key);
          return call(ops);
        };
      if (prop === 'put')
        return (key: string, ...rest: unknown[]) => {
          ctl.onPut?.(key);
          return call(key, ...rest);
        };

      if (prop === 'scan')
        return async (prefix: string, ...rest: unknown[]) => {
          const records = (await call(prefix, ...rest)) as StoredRecord[];
          if (prefix === keys.controlPrefix && (ctl.holdScans || ctl.holdIf?.(records))) {
            ctl.holdScans = false;
            ctl.holdIf = undefined;
            const released = new Promise<void>((r) => {
              releaseNow = r;
            });
            heldNow();
            await released;
          }
          return records;
        };
      return call;
    },
  }) as Wrapped;
}

const opened: Store[] = [];
const schedulers: Scheduler[] = [];
afterEach(async () => {
  await Promise.all(schedulers.splice(0).map((s) => s.stop().catch(() => {})));
  await Promise.all(opened.splice(0).map((s) => s.close().catch(() => {})));
});

async function store(): Promise<Wrapped> {
  const s = wrap(await openStore(space));
  opened.push(s);
  return s;
}

/** A scheduler whose events are all recorded. */
function scheduler(options: SchedulerOptions) {
  const s = createScheduler({ pollInterval: '100ms', stopTimeout: '5s', ...options });
  schedulers.push(s);
  return { s, events: recordEvents(s) };
}

const at = (e: { fireTime: Date }) => e.fireTime.getTime();

describe('the scheduler makes progress when work does not fit in its free slots', () => {
  const shardsRun = (events: SchedulerEvents['succeeded'][], job: string, fireTime?: number) =>
    new Set(
      events
        .filter((e) => e.job === job && (fireTime === undefined || at(e) === fireTime))
        .map((e) => e.shard),
    ).size;

  it('runs every shard of an occurrence with more shards than slots (shards 32, concurrency 16)', async () => {
    const st = await store();
    const job = unique('shards');
    const { s, events } = scheduler({ store: st, node: unique('n'), concurrency: 16 });
    s.define(job, { every: '2s', shards: 32 }, () => sleep(100));
    await s.start();
    await until(() => events.started.length > 0, 10_000, 'a first shard');
    const first = at(events.started[0]!);
    await until(
      () => shardsRun(events.succeeded, job, first) === 32,
      10_000,
      'all 32 shards of one fire time',
    );
    const occurrences = events.started.map((e) => `${at(e)}|${e.shard}`);
    expect(new Set(occurrences).size).toBe(occurrences.length);
  });

  it('runs every shard of a triggered run with more shards than slots', async () => {
    const st = await store();
    const job = unique('shards-manual');
    const { s, events } = scheduler({ store: st, node: unique('n'), concurrency: 16 });
    s.define(job, { shards: 32 }, () => sleep(100));
    await s.start();
    // The request is consumed only once every shard is on record, so none is lost.
    await s.trigger(job);
    await until(() => shardsRun(events.succeeded, job) === 32, 10_000, 'all 32 shards of a triggered run');
    let left = await st.scan(keys.triggerPrefix, { limit: 100 });
    for (const deadline = Date.now() + 5_000; left.length > 0 && Date.now() < deadline; ) {
      await sleep(50);
      left = await st.scan(keys.triggerPrefix, { limit: 100 });
    }
    expect(left).toEqual([]);
    expect(events.started).toHaveLength(32);
  });
});

describe('misfires after an outage longer than any enumeration cap', () => {
  /** A job whose high-water mark is `missed` fire times of `stepMs` ago: what a node finds after a long outage. */
  async function outage(st: Store, job: string, stepMs: number, missed: number): Promise<number> {
    const now = await st.now();
    const mark = Math.floor(now / stepMs) * stepMs - missed * stepMs;
    await st.put(keys.highWater(job, undefined), String(mark));
    return mark;
  }

  for (const trigger of [{ every: '1s' }, { cron: '* * * * * *' }] as const) {
    it(`run-once replays exactly once after 20,000 missed fire times (${JSON.stringify(trigger)}), reported in one log line`, async () => {
      const st = await store();
      const job = unique('once');
      const mark = await outage(st, job, 1000, 20_000);
      const { s, events } = scheduler({ store: st, node: unique('n') });
      const lines: string[] = [];
      attachRunLog(s, new CliLog((line) => lines.push(line)));
      s.define(job, { ...trigger, misfire: 'run-once' }, () => {});
      await s.start();
      const startedAt = await st.now();
      await until(
        () => events.succeeded.filter((e) => e.source === 'schedule' && at(e) > startedAt).length >= 2,
        15_000,
        'two on-time runs after the replay',
      );
      await s.stop();
      const replays = events.started.filter((e) => e.source === 'misfire');
      expect(replays).toHaveLength(1);
      const replay = at(replays[0]!);
      expect(replay).toBeLessThan(startedAt - 1000);
      expect(replay).toBeGreaterThan(startedAt - 3000);
      // One event for the whole skipped stretch, one for the replay.
      const skipped = events.misfired.filter((m) => m.action === 'skipped');
      expect(skipped).toHaveLength(1);
      expect(skipped[0]!.firstFireTime.getTime()).toBe(mark + 1000);
      expect(at(skipped[0]!)).toBe(replay - 1000);
      if ('every' in trigger) expect(skipped[0]!.count).toBe((replay - mark) / 1000 - 1);
      else expect(skipped[0]!.count).toBeUndefined();
      expect(events.misfired.filter((m) => m.action === 'run').map(at)).toEqual([replay]);
      const misfireLines = lines.filter((l) => l.includes('misfired'));
      expect(misfireLines).toHaveLength(1);
      expect(misfireLines[0]).toContain(`fire=${new Date(replay).toISOString()} action=run skipped=`);
      expect(events.error).toEqual([]);
    }, 30_000);
  }

  // [what, catchUpLimit, handler ms]. A limit beyond one store batch: the misfire scan reads the
  // pending records of the span's tail (due/misfire.ts `unclaimed`), up to catchUpLimit + a few
  // keys, more than getMany takes at once (MAX_BATCH, 1,000).
  const catchUps: [string, number, number][] = [
    ['catch-up replays exactly the latest catchUpLimit, oldest first, after 20,000 missed', 3, 50],
    ['catch-up with a catchUpLimit beyond one store batch (1,500) replays after 20,000 missed', 1500, 20],
  ];
  for (const [what, catchUpLimit, runMs] of catchUps)
    it(what, async () => {
      const st = await store();
      const job = unique('catchup');
      const mark = await outage(st, job, 1000, 20_000);
      const { s, events } = scheduler({ store: st, node: unique('n') });
      s.define(job, { every: '1s', misfire: 'catch-up', catchUpLimit }, () => sleep(runMs));
      await s.start();
      await until(
        () => events.succeeded.filter((e) => e.source === 'misfire').length >= 3,
        15_000,
        'three replays',
      );
      // Time for a replay beyond the limit, or a second run of one, to show.
      await sleep(1500);
      await s.stop();
      const replays = events.started.filter((e) => e.source === 'misfire').map(at);
      const skipped = events.misfired.filter((m) => m.action === 'skipped');
      expect(skipped).toHaveLength(1);
      const lastSkipped = at(skipped[0]!);
      expect(skipped[0]!.count).toBe((lastSkipped - mark) / 1000);
      expect(replays.slice(0, 3)).toEqual([lastSkipped + 1000, lastSkipped + 2000, lastSkipped + 3000]);
      expect(new Set(replays).size).toBe(replays.length);
      expect(events.error).toEqual([]);
    }, 30_000);
});

describe('start() and stop() are ordered and idempotent', () => {
  it('stop() called during start() leaves the node stopped; it starts again afterwards', async () => {
    const st = await store();
    const id = unique('n');
    const job = unique('racing');
    const { s, events } = scheduler({ store: st, node: id });
    s.define(job, { every: '100ms' }, () => {});
    await Promise.all([s.start(), s.stop()]);
    await sleep(600);
    expect(events.started).toEqual([]);
    expect((await s.nodes()).map((n) => n.id)).not.toContain(id);
    await s.start();
    await until(() => events.started.length > 0, 5_000, 'a run after the real start');
    await s.stop();
  });

  it('two concurrent start() calls run one loop', async () => {
    const st = await store();
    let sleeping = 0;
    let most = 0;
    const clock: Clock = {
      monotonic: () => performance.now(),
      async sleep(ms, signal) {
        most = Math.max(most, ++sleeping);
        try {
          await systemClock.sleep(ms, signal);
        } finally {
          sleeping--;
        }
      },
    };
    const { s } = scheduler({ store: st, node: unique('n'), pollInterval: '50ms', clock });
    await Promise.all([s.start(), s.start()]);
    await sleep(400);
    // No job defined: the loop is the only thing that sleeps on this clock.
    expect(most).toBe(1);
    await s.stop();
  });

  it('a job defined while start() is under way is recorded in the job registry', async () => {
    const st = await store();
    const first = unique('early');
    const late = unique('late');
    const { s } = scheduler({ store: st, node: unique('n') });
    s.define(first, {}, () => {});
    st.ctl.onPut = (key) => {
      if (key === keys.job(first)) {
        st.ctl.onPut = undefined;
        s.define(late, {}, () => {});
      }
    };
    await s.start();
    let record: string | null = null;
    for (let i = 0; i < 40 && record === null; i++) {
      record = await st.get(keys.job(late));
      if (record === null) await sleep(50);
    }
    expect(record).not.toBeNull();
    expect((await s.jobs()).map((j) => j.name)).toContain(late);
  });

  it('a restarted node is listed by nodes() as soon as start() resolves', async () => {
    const st = await store();
    const id = unique('n');
    const { s } = scheduler({ store: st, node: id, pollInterval: '1s' });
    await s.start();
    expect((await s.nodes()).map((n) => n.id)).toContain(id);
    await s.stop();
    expect((await s.nodes()).map((n) => n.id)).not.toContain(id);
    await s.start();
    expect((await s.nodes()).map((n) => n.id)).toContain(id);
  });
});

describe('a store blip while a claim is settled frees it at once, not at the end of its lease', () => {
  it('the write that consumes a trigger request fails once: the run still happens, once', async () => {
    const st = await store();
    const job = unique('consume');
    const { s, events } = scheduler({ store: st, node: unique('n') });
    s.define(job, { lockAtMostFor: '20s' }, () => {});
    st.ctl.failApply = (ops) => ops.some((op) => op.op === 'delete' && op.key.startsWith(keys.triggerPrefix));
    await s.start();
    await s.trigger(job);
    await until(
      () => events.succeeded.length === 1,
      4_000,
      'the triggered run, well before the 20 s lease ends',
    );
    await sleep(500);
    expect(st.ctl.failed).toHaveLength(1);
    expect(events.started).toHaveLength(1);
    expect(await st.scan(keys.triggerPrefix, { limit: 100 })).toEqual([]);
  });

  it("a failed release of an overlap gate is retried: the job's next run is not skipped", async () => {
    const st = await store();
    const job = unique('gate');
    const { s, events } = scheduler({ store: st, node: unique('n') });
    s.define(job, { lockAtMostFor: '20s' }, () => {});
    await s.start();
    // A trigger request whose occurrence another node holds: this node wins only the gate, and
    // gives it back — and that write fails once.
    const id = randomId(9);
    const requestedAt = await st.now();
    const occ = { job, scheduleId: `manual:${id}`, fireTime: requestedAt, shard: undefined };
    const [held] = await st.acquire([{ key: keys.occurrence(occ), owner: 'another node', leaseMs: 20_000 }]);
    expect(held).not.toBeNull();
    const gate = keys.runGate(job, undefined, undefined);
    st.ctl.failApply = (ops) => ops.some((op) => op.op === 'release' && op.key === gate);
    await st.put(keys.triggerRequest(job, id), JSON.stringify({ id, job, requestedAt }));
    await until(() => st.ctl.failed.length === 1, 5_000, 'the failed gate release');
    await st.delete(keys.triggerRequest(job, id)); // the other node consumes it
    await sleep(500);
    await s.trigger(job);
    await until(() => events.succeeded.length === 1 || events.skipped.length > 0, 5_000, 'the next run');
    expect(events.skipped).toEqual([]);
    expect(events.succeeded).toHaveLength(1);
  });
});

describe('pause() and polls', () => {
  it('a poll already under way when pause() is called does not undo the pause', async () => {
    const st = await store();
    const job = unique('pause');
    const { s, events } = scheduler({ store: st, node: unique('n'), pollInterval: '1s' });
    s.define(job, { every: '100ms' }, () => {});
    await s.start();
    await until(() => events.succeeded.length >= 2, 5_000, 'two runs');
    st.ctl.holdScans = true;
    await st.ctl.held; // the next poll has read the store (no pause yet) and waits
    await s.pause(job);
    const pausedAt = await st.now();
    st.ctl.release();
    await sleep(800); // less than a poll interval: no later poll corrects it
    const after = (e: RunEvent) => at(e) > pausedAt + 50;
    expect(events.started.filter(after)).toEqual([]);
  });
});

describe('a queued recovery read back after another node started it', () => {
  it('runs the next attempt, not attempt 1 again over the first one', async () => {
    // The race (simulator, `jit,jall,sh,shs,pq` busy, seed 101 at 4c9cc05): a claim that never
    // started waits behind its gate as a pending record of source `recover`. Node A's poll reads
    // it; before A claims it, node B takes the record, starts attempt 1 and loses its lease at
    // once (abandoned, its in-flight record left for recovery, the occurrence freed). A then wins
    // the occurrence from its stale read. Here B's part is written by hand while A's poll waits.
    const st = await store();
    const job = unique('requeued');
    const hour = 3_600_000;
    const now = await st.now();
    const F = Math.floor(now / hour) * hour - hour;
    // Nothing missed since: the trigger's latest fire time is marked as handled.
    await st.put(keys.highWater(job, undefined), String(Math.floor(now / hour) * hour));
    const pendingKey = keys.pending(job, undefined, undefined, F);
    const pending = JSON.stringify({ job, fireTime: F, source: 'recover', wait: true });
    await st.put(pendingKey, pending);
    const attempts: number[] = [];
    const { s, events } = scheduler({ store: st, node: unique('a'), pollInterval: '200ms' });
    s.define(job, { every: '1h', lockAtMostFor: '3s' }, (ctx) => {
      attempts.push(ctx.attempt);
    });
    // A's first poll that reads the pending record waits once it has read it (no in-flight record).
    st.ctl.holdIf = (records) => records.some((r) => r.key === pendingKey);
    // (start() polls once itself: it returns after the release.)
    const started = s.start();
    await st.ctl.held;
    // B: a real grant of the occurrence (a lower token than A's), its start, its abandonment.
    const occ = { job, scheduleId: undefined, fireTime: F, shard: undefined };
    const [lease] = await st.acquire([{ key: keys.occurrence(occ), owner: 'b', leaseMs: 3_000 }]);
    if (!lease) throw new Error('the occurrence is free: B is granted it');
    const startedAt = await st.now();
    const inflight = {
      job,
      fireTime: F,
      attempt: 1,
      token: lease.token,
      node: 'b',
      source: 'recover',
      startedAt,
      claimedAt: lease.acquiredAt,
      leaseMs: 3_000,
    };
    const abandoned = encodeHistory({
      job,
      fireTime: new Date(F),
      node: 'b',
      attempt: 1,
      token: lease.token,
      source: 'recover',
      status: 'abandoned',
      startedAt: new Date(startedAt),
      finishedAt: new Date(startedAt + 50),
      error: 'lease could not be extended in time',
    });
    await st.apply([
      { op: 'delete', key: pendingKey, ifValue: pending },
      { op: 'put', key: keys.inflight(occ), value: JSON.stringify(inflight) },
      { op: 'put', key: keys.history(occ, 1), value: abandoned },
      { op: 'release', key: lease.key, token: lease.token },
    ]);
    st.ctl.release();
    await started;
    await until(() => attempts.length > 0, 5_000, "A's run of the fire time");
    await until(() => events.succeeded.length > 0, 5_000, 'its outcome');
    // Attempt 1 started on B and is on record: A's run is attempt 2, and attempt 1 stays abandoned.
    expect(attempts).toEqual([2]);
    const history = await s.history({ job });
    const byAttempt = new Map(history.map((e) => [e.attempt, e.status]));
    expect(byAttempt.get(1)).toBe('abandoned');
    expect(byAttempt.get(2)).toBe('succeeded');
  });
});

describe('stored schedules', () => {
  it('reports a stored schedule whose trigger does not compile once, until it changes', async () => {
    const st = await store();
    const job = unique('bad');
    const { s, events } = scheduler({ store: st, node: unique('n'), pollInterval: '50ms' });
    s.define(job, {}, () => {});
    await s.start();
    // Written around upsert's validation (an older or newer node, a hand edit): the record and a
    // due entry for it, as upsert would write them.
    const write = async (cron: string, v: string) => {
      await st.put(keys.schedule('bad'), JSON.stringify({ id: 'bad', job, cron, v }));
      await st.put(keys.dueEntry((await st.now()) - 10, 'bad', v), JSON.stringify({ job }));
      await st.put(keys.scheduleRevision, v);
    };
    const reports = () => events.error.filter((e) => e.during === 'schedule bad').length;
    await write('not a cron', 'v1');
    await sleep(600);
    expect(reports()).toBe(1);
    await write('still not a cron', 'v2');
    await sleep(600);
    expect(reports()).toBe(2);
    await s.schedules.upsert({ id: 'bad', job, cron: '* * * * * *' });
    await until(
      () => events.succeeded.some((e) => e.scheduleId === 'bad'),
      5_000,
      'the fixed schedule to run',
    );
    expect(reports()).toBe(2);
  });
});
