/**
 * Exclusions and calendars (issue 32 item 3) on one backend per test file:
 * `describeExclude(name, openStore)`. Two nodes, triggers every second: an excluded fire time is
 * recorded skipped (reason `excluded`) exactly once fleet-wide and never run, every other one runs
 * once; a calendar change reaches both nodes within a poll; next() skips what is excluded; the
 * history checker bears every `excluded` skip out against the exclude lists.
 */

import { describe, expect, it } from 'vitest';
import { OncelyError } from '../../src/core/errors.js';
import { randomId } from '../../src/core/ids.js';
import { dateIn, type Exclusion } from '../../src/schedule/exclude.js';
import type { HistoryEntry, JobContext, SchedulerEvents } from '../../src/scheduler/types.js';
import type { Store } from '../../src/store/types.js';
import { checkHistory, type RunRecord, type SkipRecord } from '../../src/testing/history-check.js';
import { until } from './scheduler-suite.js';
import { definedWhere, expectInvalid, openFleet } from './suite-kit.js';

export type OpenStore = () => Promise<Store>;

export interface ExcludeSuiteOptions {
  /** Skip the suite with this reason (server unavailable outside CI). */
  skip?: string | undefined;
  /** Also run the backend-independent tests (bad input); one file is enough. */
  validation?: boolean;
}

interface Start {
  job: string;
  node: string;
  scheduleId: string | undefined;
  fireTime: number;
  at: number;
}

export function describeExclude(name: string, open: OpenStore, options: ExcludeSuiteOptions = {}): void {
  (options.skip !== undefined ? describe.skip : describe.concurrent)(`exclude and calendars: ${name}`, () => {
    async function fleet(count: number) {
      const { stores, nodes, halt, stop } = await openFleet(open, count, (i) => `x${i}-${randomId(3)}`);
      const starts: Start[] = [];
      const skipped: SchedulerEvents['skipped'][] = [];
      for (const n of nodes) n.on('skipped', (e) => skipped.push(e));
      const handler = (i: number) => async (ctx: JobContext) => {
        starts.push({
          job: ctx.job,
          node: ctx.node,
          scheduleId: ctx.scheduleId,
          fireTime: ctx.fireTime.getTime(),
          at: await stores[i]!.now(),
        });
      };
      return { stores, nodes, starts, skipped, handler, halt, stop };
    }

    /** Every fire time of `job` (and `scheduleId`) at most once among the starts. */
    function expectOnce(starts: Start[]) {
      const seen = new Set<string>();
      for (const s of starts) {
        const key = `${s.job}|${s.scheduleId}|${s.fireTime}`;
        expect(seen.has(key), `${key} ran twice`).toBe(false);
        seen.add(key);
      }
    }

    /** The history checker over what ran and what history recorded skipped, against the lists. */
    function check(
      history: HistoryEntry[],
      expected: { job: string; scheduleId?: string; fireTime: number }[],
      exclusions: { job: string; scheduleId?: string; exclude: Exclusion[] }[],
      calendars: { id: string; dates: string[]; timezone?: string }[] = [],
    ) {
      const records: RunRecord[] = history
        .filter((h) => h.status !== 'skipped')
        .map((h) => ({
          node: h.node,
          job: h.job,
          ...(h.scheduleId !== undefined && { scheduleId: h.scheduleId }),
          fireTime: h.fireTime.getTime(),
          attempt: h.attempt,
          token: h.token,
          source: h.source,
          event: 'start' as const,
          at: h.startedAt.getTime(),
        }));
      const skips: SkipRecord[] = history
        .filter((h) => h.status === 'skipped')
        .map((h) => ({
          job: h.job,
          ...(h.scheduleId !== undefined && { scheduleId: h.scheduleId }),
          from: h.fireTime.getTime(),
          to: h.fireTime.getTime(),
          reason: (h.reason ?? 'overlap') as SkipRecord['reason'],
        }));
      const jobs = [...new Set(expected.map((e) => e.job))].map((job) => ({ job, leaseMs: 30_000 }));
      const result = checkHistory({ records, skips, expected, jobs, exclusions, calendars });
      expect(result.violations.map((v) => v.message)).toEqual([]);
      return result;
    }

    it('a range over two fire times: each recorded skipped (excluded) once, never run; the others run once; next() skips them', async () => {
      const f = await fleet(2);
      const own = `exo-${randomId(5)}`;
      const stored = `exs-${randomId(5)}`;
      // Sharded, overlap queue: claimed occurrence by occurrence (no pages), one skip per shard.
      const sharded = `exq-${randomId(5)}`;
      const now = await f.stores[0]!.now();
      const base = Math.ceil(now / 1000) * 1000 + 3000;
      const exclude: Exclusion[] = [{ from: base, to: base + 2000 }];
      try {
        for (const [i, n] of f.nodes.entries()) {
          n.define(own, { every: '1s', exclude, misfireThreshold: '5s' }, f.handler(i));
          n.define(stored, { misfireThreshold: '5s' }, f.handler(i));
          n.define(sharded, { misfireThreshold: '5s', shards: 2, overlap: 'queue' }, f.handler(i));
        }
        await Promise.all(f.nodes.map((n) => n.start()));
        await f.nodes[0]!.schedules.upsert([
          { id: `${stored}-a`, job: stored, every: '1s', exclude },
          { id: `${sharded}-q`, job: sharded, every: '1s', exclude },
        ]);
        expect((await f.nodes[1]!.schedules.get(`${stored}-a`))?.exclude).toEqual(exclude);
        // What will run skips the range: asked of the job record and the stored schedule.
        for (const starts of [
          await f.nodes[1]!.next(own, { count: 8 }),
          await f.nodes[1]!.schedules.next(`${stored}-a`, { count: 8 }),
        ]) {
          const times = starts.map((d) => d.getTime());
          expect(times).not.toContain(base);
          expect(times).not.toContain(base + 1000);
          expect(times).toContain(base + 2000);
        }
        const ran = (job: string, t: number) => f.starts.some((s) => s.job === job && s.fireTime === t);
        await until(
          () =>
            ran(own, base + 3000) &&
            ran(stored, base + 3000) &&
            f.starts.filter((s) => s.job === sharded && s.fireTime === base + 3000).length === 2,
          15_000,
          'runs after the excluded range',
        );
        await f.halt();
        expectOnce(f.starts.filter((s) => s.job !== sharded));
        const shardHistory = await f.nodes[1]!.history({ job: sharded, limit: 100 });
        expect(
          shardHistory
            .filter((h) => h.status === 'skipped')
            .map((h) => [h.fireTime.getTime() - base, h.shard, h.reason])
            .sort(),
        ).toEqual([
          [0, 0, 'excluded'],
          [0, 1, 'excluded'],
          [1000, 0, 'excluded'],
          [1000, 1, 'excluded'],
        ]);
        expect(
          f.starts.some((s) => s.job === sharded && s.fireTime >= base && s.fireTime < base + 2000),
        ).toBe(false);
        for (const job of [own, stored]) {
          const mine = f.starts.filter((s) => s.job === job);
          expect(mine.some((s) => s.fireTime >= base && s.fireTime < base + 2000)).toBe(false);
          // Every fire time from the range on ran (or was excluded) once.
          for (const t of [base + 2000, base + 3000])
            expect(mine.filter((s) => s.fireTime === t)).toHaveLength(1);
          const history = await f.nodes[0]!.history({ job, limit: 100 });
          const excluded = history.filter((h) => h.status === 'skipped');
          expect(excluded.map((h) => [h.fireTime.getTime(), h.reason, h.by]).sort()).toEqual([
            [base, 'excluded', undefined],
            [base + 1000, 'excluded', undefined],
          ]);
          const events = f.skipped.filter((e) => e.job === job);
          expect(events.map((e) => [e.fireTime.getTime(), e.reason]).sort()).toEqual([
            [base, 'excluded'],
            [base + 1000, 'excluded'],
          ]);
          const scheduleId = job === stored ? `${stored}-a` : undefined;
          const expected = [base, base + 1000, base + 2000, base + 3000].map((fireTime) => ({
            job,
            ...(scheduleId !== undefined && { scheduleId }),
            fireTime,
          }));
          const result = check(history, expected, [
            { job, ...(scheduleId !== undefined && { scheduleId }), exclude },
          ]);
          expect(result.skipped).toBe(2);
          // Without the lists, the checker refuses the same skips.
          const bare = checkHistory({
            records: [],
            skips: excluded.map((h) => ({
              job,
              ...(scheduleId !== undefined && { scheduleId }),
              from: h.fireTime.getTime(),
              to: h.fireTime.getTime(),
              reason: 'excluded' as const,
            })),
            expected: expected.filter((e) => e.fireTime === base),
            jobs: [{ job, leaseMs: 30_000 }],
          });
          expect(bare.unjustifiedSkips).toBe(1);
        }
      } finally {
        await f.stop();
      }
    }, 40_000);

    it('a calendar holding today excludes on both nodes; upserted without today, runs resume within a poll on both', async () => {
      const f = await fleet(2);
      const own = `exc-${randomId(5)}`;
      const stored = `excs-${randomId(5)}`;
      const calendar = `cal-${randomId(6)}`;
      // A zone far from UTC; yesterday, today and tomorrow there, so that midnight cannot pass the test by.
      const timezone = 'Pacific/Kiritimati';
      const now = await f.stores[0]!.now();
      const days = [-1, 0, 1].map((d) => dateIn(now + d * 86_400_000, timezone));
      const exclude: Exclusion[] = [{ calendar }];
      try {
        await f.nodes[0]!.calendars.upsert({ id: calendar, dates: [...days, '2030-01-01'], timezone });
        for (const [i, n] of f.nodes.entries()) {
          n.define(own, { every: '1s', exclude }, f.handler(i));
          n.define(stored, {}, f.handler(i));
        }
        await Promise.all(f.nodes.map((n) => n.start()));
        await f.nodes[1]!.schedules.upsert({ id: `${stored}-c`, job: stored, every: '1s', exclude });
        const skipsOf = (job: string) => f.skipped.filter((e) => e.job === job && e.reason === 'excluded');
        await until(
          () => skipsOf(own).length >= 3 && skipsOf(stored).length >= 3,
          15_000,
          'excluded fire times',
        );
        expect(f.starts).toEqual([]);
        expect((await f.nodes[1]!.next(own, { count: 3 })).length).toBeLessThan(3);
        // Today leaves the calendar: both nodes run again within a poll (100 ms) and a tick.
        await f.nodes[1]!.calendars.upsert({ id: calendar, dates: ['2030-01-01'], timezone });
        const changedAt = await f.stores[0]!.now();
        const ranAfter = (job: string, node: string) =>
          f.starts.some((s) => s.job === job && s.node === node && s.fireTime > changedAt + 1000);
        await until(
          () => f.nodes.every((n) => ranAfter(own, n.node) || ranAfter(stored, n.node)),
          15_000,
          'runs on both nodes after the calendar change',
        );
        expect((await f.nodes[0]!.next(own, { count: 3 })).length).toBe(3);
        await f.halt();
        expectOnce(f.starts);
        // Nothing excluded later than a poll (and a tick in flight) after the change.
        for (const e of f.skipped) expect(e.fireTime.getTime()).toBeLessThan(changedAt + 1500);
        // No fire time both excluded and run; every excluded one recorded once.
        for (const job of [own, stored]) {
          const events = skipsOf(job).map((e) => e.fireTime.getTime());
          expect(new Set(events).size).toBe(events.length);
          for (const t of events) expect(f.starts.some((s) => s.job === job && s.fireTime === t)).toBe(false);
          const history = await f.nodes[0]!.history({ job, limit: 200 });
          const scheduleId = job === stored ? `${stored}-c` : undefined;
          const times = history.map((h) => h.fireTime.getTime()).sort((a, b) => a - b);
          const expected = times.map((fireTime) => ({
            job,
            ...(scheduleId !== undefined && { scheduleId }),
            fireTime,
          }));
          check(
            history,
            expected,
            [{ job, ...(scheduleId !== undefined && { scheduleId }), exclude }],
            [
              { id: calendar, dates: days, timezone },
              { id: calendar, dates: ['2030-01-01'], timezone },
            ],
          );
        }
        // The changes are on the audit trail (the newest 1,000 entries: the suite's other tests
        // write theirs into the same store meanwhile — 50 missed these in a CI run).
        const audit = await f.nodes[0]!.audit({ limit: 1000 });
        const mine = audit.filter((a) => a.target === calendar).map((a) => a.action);
        expect(mine).toEqual(['calendars.upsert', 'calendars.upsert']);
      } finally {
        await f.stop();
      }
    }, 40_000);

    definedWhere(options.validation)(
      'bad exclusions and calendars are refused with INVALID_ARGUMENT saying what to fix; get, list, remove',
      async () => {
        const f = await fleet(1);
        const n = f.nodes[0]!;
        const job = `exbad-${randomId(5)}`;
        const refused = expectInvalid;
        const bad = (exclude: unknown) => () =>
          n.define(`${job}-${randomId(4)}`, { every: '1s', exclude: exclude as Exclusion[] }, () => {});
        try {
          refused(bad('weekends'), /exclude must be a list/);
          refused(bad([{ cron: '61 * * * *' }]), /exclude\[0\]: cron/);
          refused(bad([{ cron: '* * * * *', timezone: 'Mars/Base' }]), /exclude\[0\]: timezone/);
          refused(bad([{ from: '2026-01-02', to: '2026-01-01' }]), /to must be after from/);
          refused(bad([{ from: 'soon', to: '2026-01-01' }]), /exclude\[0\]: from/);
          refused(bad([{ calendar: '' }]), /exclude\[0\]: calendar/);
          refused(bad([{ calendar: 'a', cron: '* * * * *' }]), /has the fields \{calendar,cron\}/);
          refused(bad(Array.from({ length: 101 }, () => ({ cron: '* * * * *' }))), /at most 100/);
          refused(
            () => n.define(job, { exclude: [{ cron: '* * * * *' }] }, () => {}),
            /needs the job's own trigger/,
          );
          const calendarRefused = async (input: unknown, pattern: RegExp) => {
            const err = await n.calendars.upsert(input as never).catch((e: unknown) => e);
            expect(err).toBeInstanceOf(OncelyError);
            expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
            expect((err as OncelyError).message).toMatch(pattern);
          };
          await calendarRefused(
            { id: 'c', dates: ['2026-02-30'] },
            /dates\[0\] must be a date written YYYY-MM-DD/,
          );
          await calendarRefused({ id: 'c', dates: ['26-12-25'] }, /YYYY-MM-DD/);
          await calendarRefused({ id: 'c', dates: [], timezone: 'Nowhere/City' }, /timezone/);
          await calendarRefused(
            { id: 'c', dates: Array.from({ length: 10_001 }, () => '2026-01-01') },
            /at most 10000 dates/,
          );
          await calendarRefused({ id: '', dates: [] }, /id must be 1-200/);
          await calendarRefused({ id: 'c', dates: [], color: 'red' }, /color/);
          // Unknown calendars: refused at upsert (naming the schedule) and at start() (naming the job).
          const missing = `nope-${randomId(5)}`;
          await expect(
            n.schedules.upsert({ id: `${job}-s`, job, every: '1s', exclude: [{ calendar: missing }] }),
          ).rejects.toThrow(new RegExp(`schedule "${job}-s": exclude names a calendar .*"${missing}"`));
          expect(await n.schedules.count({ job })).toBe(0);
          n.define(job, { every: '1s', exclude: [{ calendar: missing }] }, () => {});
          await expect(n.start()).rejects.toThrow(new RegExp(`job "${job}".*"${missing}"`));
          // get / list / remove, each change on the audit trail.
          const id = `cal-${randomId(5)}`;
          await n.calendars.upsert(
            { id, dates: ['2026-12-26', '2026-12-25', '2026-12-25'] },
            { actor: 'ops' },
          );
          const got = await n.calendars.get(id);
          expect(got?.dates).toEqual(['2026-12-25', '2026-12-26']);
          expect(got?.updatedAt).toBeInstanceOf(Date);
          expect((await n.calendars.list()).map((c) => c.id)).toContain(id);
          expect(await n.calendars.remove(id, { actor: 'ops' })).toBe(true);
          expect(await n.calendars.remove(id)).toBe(false);
          expect(await n.calendars.get(id)).toBeUndefined();
          const audit = (await n.audit({ limit: 1000 })).filter((a) => a.target === id);
          expect(audit.map((a) => [a.action, a.actor])).toEqual([
            ['calendars.remove', 'ops'],
            ['calendars.upsert', 'ops'],
          ]);
        } finally {
          await f.stop();
        }
      },
      30_000,
    );
  });
}
