/**
 * Overlap 'queue-all' (issue 32 item 5) on one backend per test file: `describeOverlap(name,
 * openStore)`. Two nodes run a job whose runs last 2.5 intervals, on its own trigger and on a
 * stored schedule (separate overlap gates), each bounded to four fire times: every fire time runs
 * exactly once, in fire-time order, never two of one gate at once, none recorded skipped
 * (superseded or otherwise). Intervals of 500 ms and runs of 1.25 s keep the test near 6 s.
 * Overlap 'replace': a job every second whose handler waits on its signal, bounded to three fire
 * times: each run but the last is aborted (an OncelyError, code REPLACED) when the next fire time
 * comes and is recorded failed; the next one runs after it ended, never two at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { OncelyError } from '../../src/core/errors.js';
import { randomId } from '../../src/core/ids.js';
import { keys } from '../../src/scheduler/keys.js';
import type { JobContext } from '../../src/scheduler/types.js';
import type { Store } from '../../src/store/types.js';
import { until } from './scheduler-suite.js';
import { openFleet } from './suite-kit.js';

export type OpenStore = () => Promise<Store>;

export interface OverlapSuiteOptions {
  /** Skip the suite with this reason (server unavailable outside CI). */
  skip?: string | undefined;
}

interface Run {
  scheduleId: string | undefined;
  fireTime: number;
  node: string;
  start: number;
  end: number;
}

const INTERVAL = 500;
const RUN_MS = 1_250;

export function describeOverlap(name: string, open: OpenStore, options: OverlapSuiteOptions = {}): void {
  (options.skip !== undefined ? describe.skip : describe.concurrent)(`overlap: ${name}`, () => {
    const fleet = (count: number) => openFleet(open, count);

    it('queue-all: every fire time that falls due during a run runs after it, in order, once, never two at once, none superseded (own trigger and a stored schedule, two nodes)', async () => {
      const f = await fleet(2);
      const job = `ovall-${randomId(5)}`;
      const runs: Run[] = [];
      const handler = async (ctx: JobContext) => {
        const run: Run = {
          scheduleId: ctx.scheduleId,
          fireTime: ctx.fireTime.getTime(),
          node: ctx.node,
          start: performance.now(),
          end: Number.NaN,
        };
        runs.push(run);
        await sleep(RUN_MS);
        run.end = performance.now();
      };
      try {
        const now = await f.stores[0]!.now();
        const startAt = Math.ceil((now + 1_000) / INTERVAL) * INTERVAL;
        // Four fire times: startAt … startAt + 1.5 s (endAt inclusive or not).
        const endAt = startAt + 3 * INTERVAL + INTERVAL / 5;
        const expected = [0, 1, 2, 3].map((i) => startAt + i * INTERVAL);
        const bounds = { every: `${INTERVAL}ms`, startAt: new Date(startAt), endAt: new Date(endAt) };
        // A generous misfire threshold: a queued fire time is claimed (and queued) on time even on
        // a busy machine, so nothing here is a misfire.
        for (const n of f.nodes)
          n.define(job, { ...bounds, overlap: 'queue-all', misfireThreshold: '5s' }, handler);
        await Promise.all(f.nodes.map((n) => n.start()));
        await f.nodes[0]!.schedules.upsert({ id: `${job}:s`, job, ...bounds });
        await until(
          () => runs.filter((r) => !Number.isNaN(r.end)).length >= 8,
          20_000,
          'four runs of each gate to end',
        );
        await sleep(300);
        for (const scheduleId of [undefined, `${job}:s`]) {
          const gate = runs.filter((r) => r.scheduleId === scheduleId).sort((a, b) => a.start - b.start);
          // Exactly once each, in fire-time order.
          expect(gate.map((r) => r.fireTime)).toEqual(expected);
          // Never two at once: each starts after the one before ended.
          for (let i = 1; i < gate.length; i++)
            expect(gate[i]!.start).toBeGreaterThanOrEqual(gate[i - 1]!.end);
        }
        const history = await f.nodes[1]!.history({ job, limit: 100 });
        expect(history.filter((h) => h.status === 'skipped')).toEqual([]);
        expect(history.filter((h) => h.status === 'succeeded').length).toBe(8);
        // Nothing left queued.
        expect(await f.stores[0]!.scan(keys.pendingPrefix(job))).toEqual([]);
      } finally {
        await f.stop();
      }
    }, 30_000);

    it('replace: each run is aborted with reason replaced when the next fire time comes, recorded failed; the next one runs after it, never two at once (two nodes)', async () => {
      const f = await fleet(2);
      const job = `ovrep-${randomId(5)}`;
      const runs: (Run & { reason: unknown })[] = [];
      const handler = async (ctx: JobContext) => {
        const run = {
          scheduleId: ctx.scheduleId,
          fireTime: ctx.fireTime.getTime(),
          node: ctx.node,
          start: performance.now(),
          end: Number.NaN,
          reason: undefined as unknown,
        };
        runs.push(run);
        // Waits on its signal (the last run, never replaced, ends on its own after 2.5 s).
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 2_500);
          ctx.signal.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              run.reason = ctx.signal.reason;
              resolve();
            },
            { once: true },
          );
        });
        run.end = performance.now();
        if (run.reason !== undefined) throw run.reason;
      };
      try {
        const now = await f.stores[0]!.now();
        const startAt = Math.ceil((now + 1_000) / 1_000) * 1_000;
        const expected = [0, 1, 2].map((i) => startAt + i * 1_000);
        for (const n of f.nodes)
          n.define(
            job,
            { every: '1s', startAt, endAt: startAt + 2_200, overlap: 'replace', misfireThreshold: '5s' },
            handler,
          );
        await Promise.all(f.nodes.map((n) => n.start()));
        await until(() => runs.filter((r) => !Number.isNaN(r.end)).length >= 3, 20_000, 'three runs to end');
        await sleep(300);
        const byStart = [...runs].sort((a, b) => a.start - b.start);
        expect(byStart.map((r) => r.fireTime)).toEqual(expected);
        for (let i = 1; i < byStart.length; i++)
          expect(byStart[i]!.start).toBeGreaterThanOrEqual(byStart[i - 1]!.end);
        for (const r of byStart.slice(0, -1)) {
          expect(r.reason).toBeInstanceOf(OncelyError);
          expect((r.reason as OncelyError).code).toBe('REPLACED');
        }
        expect(byStart.at(-1)!.reason).toBeUndefined();
        const history = await f.nodes[1]!.history({ job, limit: 100 });
        const final = (t: number) =>
          history.filter((h) => h.fireTime.getTime() === t && h.status !== 'running');
        for (const t of expected.slice(0, -1)) {
          expect(final(t).map((h) => h.status)).toEqual(['failed']);
          expect(final(t)[0]!.error).toMatch(/replaced/);
        }
        expect(final(expected.at(-1)!).map((h) => h.status)).toEqual(['succeeded']);
        expect(history.filter((h) => h.status === 'skipped')).toEqual([]);
      } finally {
        await f.stop();
      }
    }, 30_000);
  });
}
