/**
 * Backfill (issue 32 item 4), on one backend per test file: `describeBackfill(name, openStore)`.
 * Two nodes run a job every second; it is paused for a few seconds (misfire 'skip': the fire times
 * that passed are not run), then the paused range is backfilled — from both nodes at once: every
 * fire time of the range that had not run runs exactly once, in order, source `backfill`; those
 * that had run are not run again; the calls' `queued` add up to the missing count, and a second
 * call queues nothing. The same for a stored schedule (its data handed to the runs; claimed in
 * pages, and per occurrence — where the first fire time the resume settled is held "done", and
 * the backfill frees it) and for a sharded job
 * (every shard of each fire time). Bad input on one backend.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect } from 'vitest';
import { OncelyError } from '../../src/core/errors.js';
import { randomId } from '../../src/core/ids.js';
import { createScheduler, type Scheduler } from '../../src/scheduler/index.js';
import { changeText } from '../../src/scheduler/observe/audit-text.js';
import type { HistoryEntry, JobContext } from '../../src/scheduler/types.js';
import type { Store } from '../../src/store/types.js';
import { until } from './scheduler-suite.js';
import { definedWhere, nodesTest, untilStoreTime } from './suite-kit.js';

export type OpenStore = () => Promise<Store>;

export interface BackfillSuiteOptions {
  /** Skip the suite with this reason (server unavailable outside CI). */
  skip?: string | undefined;
  /** Also run the backend-independent tests (bad input); one file is enough. */
  validation?: boolean;
}

const SECOND = 1000;

interface Node {
  s: Scheduler;
  store: Store;
}

interface Run {
  fireTime: number;
  source: string;
  shard: number | undefined;
  scheduleId: string | undefined;
  data: unknown;
  attempt: number;
  node: string;
}

function runOf(ctx: JobContext & { source?: string }, source: string): Run {
  return {
    fireTime: ctx.fireTime.getTime(),
    source,
    shard: ctx.shard?.index,
    scheduleId: ctx.scheduleId,
    data: ctx.data,
    attempt: ctx.attempt,
    node: ctx.node,
  };
}

const iso = (t: number) => new Date(t).toISOString().slice(11, 23);

export function describeBackfill(name: string, open: OpenStore, options: BackfillSuiteOptions = {}): void {
  (options.skip !== undefined ? describe.skip : describe.concurrent)(`backfill: ${name}`, () => {
    const unique = (label: string) => `${label}-${randomId(5)}`;

    const test = (
      title: string,
      body: (node: (id: string) => Promise<Node>) => Promise<void>,
      timeoutMs = 90_000,
    ) => nodesTest(open, (s, store): Node => ({ s, store }), title, body, timeoutMs);

    /**
     * Two nodes defining `job` (`define` per node, the handler recording each run with its source
     * from the `started` event), started; the job paused for ~3.5 s and resumed; returns once a run
     * after the resume happened.
     */
    async function pausedFleet(
      node: (id: string) => Promise<Node>,
      job: string,
      define: (n: Node, handler: (ctx: JobContext) => Promise<void>) => void,
      pauseMs = 3500,
      afterStart?: (n: Node) => Promise<void>,
    ): Promise<{ n1: Node; n2: Node; runs: Run[]; pausedAt: number; resumedAt: number }> {
      const runs: Run[] = [];
      const [n1, n2] = [await node(`${job}-1`), await node(`${job}-2`)];
      for (const n of [n1, n2]) {
        const sources = new Map<string, string>();
        n.s.on('started', (e) => {
          sources.set(
            `${e.fireTime.getTime()}|${e.shard ?? ''}|${e.scheduleId ?? ''}|${e.attempt}`,
            e.source,
          );
        });
        define(n, async (ctx) => {
          const key = `${ctx.fireTime.getTime()}|${ctx.shard?.index ?? ''}|${ctx.scheduleId ?? ''}|${ctx.attempt}`;
          runs.push(runOf(ctx, sources.get(key) ?? '?'));
          await sleep(150);
        });
      }
      await Promise.all([n1.s.start(), n2.s.start()]);
      await afterStart?.(n1);
      await until(() => runs.length >= 2, 15_000, 'first runs');
      await n1.s.pause(job);
      const pausedAt = await n1.store.now();
      await untilStoreTime(n1.store, pausedAt + pauseMs);
      await n2.s.resume(job);
      const resumedAt = await n1.store.now();
      await until(
        () => runs.some((r) => r.source === 'schedule' && r.fireTime > resumedAt + SECOND),
        15_000,
        'a run after the resume',
      );
      // The range to backfill ends 2.5 s before now: far enough after the resume to cover the pause.
      await untilStoreTime(n1.store, resumedAt + 4000);
      return { n1, n2, runs, pausedAt, resumedAt };
    }

    /** The range to backfill: from the first fire time that ran, to a whole second well in the past. */
    async function rangeOf(store: Store, runs: readonly Run[]): Promise<{ from: number; to: number }> {
      const now = await store.now();
      return {
        from: Math.min(...runs.map((r) => r.fireTime)),
        to: Math.floor((now - 2500) / SECOND) * SECOND,
      };
    }

    /** The (fire time, shard) pairs of [from, to) with no run in `runs`, ascending. */
    function missingOf(
      runs: readonly Run[],
      from: number,
      to: number,
      shards: (number | undefined)[],
    ): string[] {
      const ran = new Set(runs.map((r) => `${r.fireTime}|${r.shard ?? ''}`));
      const out: string[] = [];
      for (let t = from; t < to; t += SECOND)
        for (const shard of shards) if (!ran.has(`${t}|${shard ?? ''}`)) out.push(`${t}|${shard ?? ''}`);
      return out;
    }

    /** What is wrong with the runs of [from, to): each (fire time, shard) exactly once. */
    function problemsOf(
      runs: readonly Run[],
      from: number,
      to: number,
      shards: (number | undefined)[],
    ): string[] {
      const count = new Map<string, number>();
      for (const r of runs)
        count.set(`${r.fireTime}|${r.shard ?? ''}`, (count.get(`${r.fireTime}|${r.shard ?? ''}`) ?? 0) + 1);
      const problems: string[] = [];
      for (let t = from; t < to; t += SECOND)
        for (const shard of shards) {
          const n = count.get(`${t}|${shard ?? ''}`) ?? 0;
          if (n !== 1) problems.push(`${iso(t)} shard ${shard ?? '-'} ran ${n} times`);
        }
      return problems;
    }

    const skippedKeys = (history: readonly HistoryEntry[]) =>
      history
        .filter((h) => h.status === 'skipped')
        .map((h) => `${h.fireTime.getTime()}|${h.shard ?? ''}|${h.attempt}`)
        .sort();

    test('a job trigger: the fire times a pause left run once each, in order, source backfill; two calls at once (two nodes) queue each once', async (node) => {
      const job = unique('bf');
      const { n1, n2, runs, pausedAt, resumedAt } = await pausedFleet(node, job, (n, handler) =>
        n.s.define(job, { every: '1s', misfire: 'skip' }, handler),
      );
      const { from, to } = await rangeOf(n1.store, runs);
      const missing = missingOf(runs, from, to, [undefined]);
      const timeline = () =>
        `paused ${iso(pausedAt)}, resumed ${iso(resumedAt)}, range ${iso(from)}..${iso(to)}; runs ${runs.map((r) => `${iso(r.fireTime)}:${r.source}`).join(' ')}`;
      expect(missing.length, timeline()).toBeGreaterThanOrEqual(2);
      const skippedBefore = skippedKeys(await n1.s.history({ job, limit: 1000 }));

      const [a, b] = await Promise.all([
        n1.s.backfill({ job, from: new Date(from), to: new Date(to), actor: 'ops' }),
        n2.s.backfill({ job, from: new Date(from).toISOString(), to }),
      ]);
      expect(a.queued + b.queued, timeline()).toBe(missing.length);
      const backfilled = () => runs.filter((r) => r.source === 'backfill');
      await until(() => backfilled().length >= missing.length, 30_000, `${missing.length} backfill runs`);
      // A window for a duplicate to show.
      await sleep(1500);
      await Promise.all([n1.s.stop(), n2.s.stop()]);

      // Exactly the missing fire times, each once, in order; every fire time of the range ran once.
      expect(
        backfilled().map((r) => `${r.fireTime}|`),
        timeline(),
      ).toEqual(missing);
      expect(
        problemsOf(
          runs.filter((r) => r.fireTime >= from && r.fireTime < to),
          from,
          to,
          [undefined],
        ),
        timeline(),
      ).toEqual([]);
      // History: each backfill run succeeded with source backfill; no entry it found was overwritten.
      const history = await n1.s.history({ job, limit: 1000 });
      const fromBackfill = history.filter((h) => h.source === 'backfill');
      expect(fromBackfill.map((h) => h.status)).toEqual(missing.map(() => 'succeeded'));
      expect(skippedKeys(history)).toEqual(expect.arrayContaining(skippedBefore));
      // Asked again: nothing left to queue.
      expect(await n1.s.backfill({ job, from, to })).toEqual({ queued: 0 });
      // The audit trail: each call, with its range and what it queued.
      const audit = (await n1.s.audit({ job })).filter((e) => e.action === 'backfill');
      expect(audit).toHaveLength(3);
      expect(audit.map((e) => (e.after as { queued: number }).queued).sort()).toEqual(
        [0, a.queued, b.queued].sort(),
      );
      expect(audit.find((e) => e.actor === 'ops')).toMatchObject({
        target: job,
        job,
        after: { from: new Date(from).toISOString(), to: new Date(to).toISOString(), queued: a.queued },
      });
      // As `oncely audit` and the dashboard show it.
      expect(changeText(audit.find((e) => e.actor === 'ops')!)).toBe(
        `${new Date(from).toISOString()} to ${new Date(to).toISOString()}: queued ${a.queued}`,
      );
    });

    for (const [overlap, how] of [
      ['skip', 'claimed in pages'],
      ['queue', 'claimed per occurrence: the first fire time the resume settled is held "done", and freed'],
    ] as const)
      test(`a stored schedule (overlap ${overlap}, ${how}): its fire times a pause left run once each with its data, in order`, async (node) => {
        const job = unique('bfs');
        const id = `${job}:user-42`;
        const { n1, n2, runs, pausedAt, resumedAt } = await pausedFleet(
          node,
          job,
          (n, handler) => n.s.define(job, { misfire: 'skip', overlap }, handler),
          3500,
          (n) => n.s.schedules.upsert({ id, job, every: '1s', data: { user: 42 } }),
        );
        expect(runs.every((r) => r.scheduleId === id)).toBe(true);
        const { from, to } = await rangeOf(n1.store, runs);
        const missing = missingOf(runs, from, to, [undefined]);
        const timeline = () =>
          `paused ${iso(pausedAt)}, resumed ${iso(resumedAt)}, range ${iso(from)}..${iso(to)}; runs ${runs.map((r) => `${iso(r.fireTime)}:${r.source}`).join(' ')}`;
        expect(missing.length, timeline()).toBeGreaterThanOrEqual(2);
        const { queued } = await n2.s.backfill({ job, scheduleId: id, from, to });
        expect(queued, timeline()).toBe(missing.length);
        const backfilled = () => runs.filter((r) => r.source === 'backfill');
        await until(() => backfilled().length >= missing.length, 30_000, `${missing.length} backfill runs`);
        await sleep(1500);
        await Promise.all([n1.s.stop(), n2.s.stop()]);
        expect(
          backfilled().map((r) => `${r.fireTime}|`),
          timeline(),
        ).toEqual(missing);
        expect(backfilled().every((r) => r.scheduleId === id)).toBe(true);
        expect(backfilled().map((r) => r.data)).toEqual(missing.map(() => ({ user: 42 })));
        expect(
          problemsOf(
            runs.filter((r) => r.fireTime >= from && r.fireTime < to),
            from,
            to,
            [undefined],
          ),
          timeline(),
        ).toEqual([]);
        expect(await n1.s.backfill({ job, scheduleId: id, from, to })).toEqual({ queued: 0 });
        const [entry] = (await n1.s.audit({ scheduleId: id })).filter((e) => e.action === 'backfill');
        expect(entry).toMatchObject({ target: id, job, scheduleId: id });
      });

    test('a sharded job: every shard of each fire time the pause left runs once', async (node) => {
      const job = unique('bfsh');
      const { n1, n2, runs } = await pausedFleet(
        node,
        job,
        (n, handler) => n.s.define(job, { every: '1s', misfire: 'skip', shards: 2 }, handler),
        2500,
      );
      const { from, to } = await rangeOf(n1.store, runs);
      const missing = missingOf(runs, from, to, [0, 1]);
      expect(missing.length).toBeGreaterThanOrEqual(2);
      const [a, b] = await Promise.all([n1.s.backfill({ job, from, to }), n2.s.backfill({ job, from, to })]);
      expect(a.queued + b.queued, `queued ${a.queued} + ${b.queued}; missing ${missing.join(' ')}`).toBe(
        missing.length,
      );
      const backfilled = () => runs.filter((r) => r.source === 'backfill');
      await until(() => backfilled().length >= missing.length, 30_000, `${missing.length} backfill runs`);
      await sleep(1500);
      await Promise.all([n1.s.stop(), n2.s.stop()]);
      expect(
        backfilled()
          .map((r) => `${r.fireTime}|${r.shard}`)
          .sort(),
      ).toEqual([...missing].sort());
      // In order per shard.
      for (const shard of [0, 1]) {
        const times = backfilled()
          .filter((r) => r.shard === shard)
          .map((r) => r.fireTime);
        expect(times).toEqual([...times].sort((x, y) => x - y));
      }
      expect(
        problemsOf(
          runs.filter((r) => r.fireTime >= from && r.fireTime < to),
          from,
          to,
          [0, 1],
        ),
      ).toEqual([]);
    });

    definedWhere(options.validation)(
      'bad input: INVALID_ARGUMENT or NOT_FOUND saying what to fix',
      async () => {
        const store = await open();
        const s = createScheduler({ store, node: unique('bad'), logger: false });
        try {
          const job = unique('bad-job');
          s.define(job, { every: '1s' }, async () => {});
          const bare = unique('bare');
          s.define(bare, {}, async () => {});
          await s.start();
          await s.stop();
          const now = await store.now();
          const hour = 3_600_000;
          const code = async (p: Promise<unknown>) => {
            try {
              await p;
            } catch (err) {
              expect(err).toBeInstanceOf(OncelyError);
              return [(err as OncelyError).code, (err as Error).message];
            }
            return ['resolved', ''];
          };
          const call = (o: unknown) => code(s.backfill(o as Parameters<Scheduler['backfill']>[0]));
          expect(await call({ job, from: now - hour, to: now, extra: 1 })).toEqual([
            'INVALID_ARGUMENT',
            expect.stringContaining('extra'),
          ]);
          expect(await call({ job: '', from: now - hour, to: now })).toEqual([
            'INVALID_ARGUMENT',
            expect.any(String),
          ]);
          expect(await call({ job, from: 'yesterday', to: now })).toEqual([
            'INVALID_ARGUMENT',
            expect.stringContaining('from must be a Date, an ISO-8601 string or epoch ms'),
          ]);
          expect(await call({ job, from: now, to: now - hour })).toEqual([
            'INVALID_ARGUMENT',
            expect.stringContaining('must be before to'),
          ]);
          expect(await call({ job, from: now - hour, to: now + hour })).toEqual([
            'INVALID_ARGUMENT',
            expect.stringContaining('backfill is for fire times that have passed'),
          ]);
          expect(await call({ job, from: now - 3 * hour, to: now })).toEqual([
            'INVALID_ARGUMENT',
            expect.stringContaining('at most 10000 per call: split the range'),
          ]);
          expect(await call({ job: unique('nope'), from: now - hour, to: now })).toEqual([
            'NOT_FOUND',
            expect.stringContaining('no job named'),
          ]);
          expect(await call({ job: bare, from: now - hour, to: now })).toEqual([
            'INVALID_ARGUMENT',
            expect.stringContaining('pass scheduleId'),
          ]);
          expect(await call({ job, scheduleId: 'no-such-schedule', from: now - hour, to: now })).toEqual([
            'NOT_FOUND',
            expect.stringContaining('has no stored schedule "no-such-schedule"'),
          ]);
          expect(await call({ job, from: now - hour, to: now, actor: '' })).toEqual([
            'INVALID_ARGUMENT',
            expect.stringContaining('actor'),
          ]);
          // An empty range of a job nothing ran of: nothing to queue, not an error.
          const second = Math.floor((now - 10 * SECOND) / SECOND) * SECOND;
          expect(await s.backfill({ job, from: second + 100, to: second + 600 })).toEqual({ queued: 0 });
        } finally {
          await s.stop().catch(() => {});
          await store.close();
        }
      },
    );
  });
}
