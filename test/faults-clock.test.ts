/**
 * Per-process wall-clock faults with libfaketime (Debian package `faketime`), on real PostgreSQL
 * and Redis: node processes whose `Date.now()` is 120 s fast, 120 s slow, or steps by an hour
 * while a handler runs. The scheduler does all lease maths on the store clock and waits on the
 * monotonic clock, so none of this may change which fire times run, or when.
 * (libfaketime as test/harness/clock-nodes.ts preloads it; the child prints its offset from the
 * store clock, and the tests check it.)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/index.js';
import { createScheduler } from '../src/scheduler/index.js';
import { expectedOccurrences, recordsFromHistory } from '../src/testing/index.js';
import { type ServerBackend, serverBackend, testPrefix } from './harness/backends.js';
import {
  fakeTimeEnv,
  hasFaketime,
  LIBFAKETIME,
  parseLines as parse,
  skewEnv,
  startClockNode as startNode,
  stopAll,
  waitLine,
} from './harness/clock-nodes.js';
import { expectHistoryHolds, runsFromLines } from './harness/history.js';
import { until } from './harness/scheduler-suite.js';

const tmp = mkdtempSync(join(tmpdir(), 'oncely-faketime-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

for (const backend of ['postgres', 'redis'] as const satisfies readonly ServerBackend[]) {
  const target = serverBackend(backend);
  describe.skipIf(target.skip ?? (hasFaketime ? false : `${LIBFAKETIME} is missing`))(
    `clock faults (libfaketime) on ${backend}`,
    () => {
      it('three nodes 120 s fast, 120 s slow and right: each fire time once, never before it on the store clock, skewed nodes run too', async () => {
        const prefix = testPrefix(`skew_${backend}`);
        const job = 'skewed';
        const skews = { fast: 120_000, slow: -120_000, right: 0 } as const;
        const children = Object.entries(skews).map(([node, skew]) =>
          startNode(target.url!, prefix, node, job, 'skew', skewEnv(skew)),
        );
        const store = await openStore(target.url!, { prefix });
        try {
          // The preload really moves the child's Date.now() (against the store clock, same host).
          const offsets = await Promise.all(
            children.map(
              async (c) => (await waitLine(c, (l) => l.event === 'clock', 'clock line')).wallMinusStore!,
            ),
          );
          for (const [i, skew] of Object.values(skews).entries())
            expect(Math.abs(offsets[i]! - skew)).toBeLessThan(2_000);
          await Promise.all(children.map((c) => waitLine(c, (l) => l.event === 'ready', 'ready')));
          const from = await store.now();
          const starts = () => children.flatMap(parse).filter((l) => l.event === 'start');
          await until(
            () =>
              starts().some((l) => l.fireTime! >= from + 5_000) &&
              ['fast', 'slow'].every((n) => starts().some((l) => l.node === n)),
            20_000,
            '5 s of fire times, with runs on both skewed nodes',
          );
          const to = await store.now();
          await stopAll(children);

          const seen = starts();
          // Never before the fire time on the store clock (read in the handler).
          expect(seen.filter((l) => l.storeNow! < l.fireTime!)).toEqual([]);
          const occurrence = (fireTime: number, shard: number | null | undefined) => `${fireTime}#${shard}`;
          const runs = seen.map((l) => occurrence(l.fireTime!, l.shard));
          expect(runs.length).toBe(new Set(runs).size);
          const history = await createScheduler({ store }).history({ job, limit: 500 });
          expect(history.filter((h) => h.startedAt.getTime() < h.fireTime.getTime())).toEqual([]);
          const recorded = history.map((h) => occurrence(h.fireTime.getTime(), h.shard));
          expect(recorded.length).toBe(new Set(recorded).size);
          expect(history.every((h) => h.status === 'succeeded' && h.attempt === 1)).toBe(true);
          // Every shard of every fire time well inside the window ran, exactly once.
          for (let t = Math.ceil((from + 1_000) / 1_000) * 1_000; t <= to - 1_000; t += 1_000)
            for (let shard = 0; shard < 4; shard++) expect(recorded).toContain(occurrence(t, shard));
          for (const n of ['fast', 'slow', 'right'])
            expect(history.filter((h) => h.node === n).length, n).toBeGreaterThan(0);
          // The history checker over the nodes' own run lines (finish times on the store clock).
          const first = Math.ceil((from + 1_000) / 1_000) * 1_000;
          const checked = expectHistoryHolds({
            ...runsFromLines(children.flatMap((c) => c.lines)),
            jobs: [{ job, leaseMs: 3_000, overlap: 'skip' }],
            expected: expectedOccurrences(job, { every: '1s' }, { from: first, to: to - 1_000, shards: 4 }),
          });
          expect(checked.recoveries).toBe(0);
        } finally {
          for (const c of children) if (c.process.exitCode === null) c.process.kill('SIGKILL');
          await store.close();
        }
      }, 40_000);

      it('a node whose wall clock steps +1 h, then -2 h, during a run: not aborted, lease kept, nothing runs twice', async () => {
        const prefix = testPrefix(`step_${backend}`);
        const job = 'stepped';
        const file = join(tmp, `${backend}.faketime`);
        writeFileSync(file, '+0s\n');
        const stepper = startNode(
          target.url!,
          prefix,
          'stepper',
          job,
          'step',
          fakeTimeEnv({ FAKETIME_TIMESTAMP_FILE: file, FAKETIME_NO_CACHE: '1' }),
        );
        const store = await openStore(target.url!, { prefix });
        const other = await openStore(target.url!, { prefix });
        const steady = createScheduler({ store: other, node: 'steady', pollInterval: '200ms' });
        const steadyRuns: number[] = [];
        steady.define(job, { every: '1s', lockAtMostFor: '2s', overlap: 'skip' }, async (ctx) => {
          steadyRuns.push(ctx.fireTime.getTime());
          await new Promise((r) => setTimeout(r, 50));
        });
        try {
          await waitLine(stepper, (l) => l.event === 'ready', 'stepper ready');
          await steady.start();
          const long = await waitLine(stepper, (l) => l.event === 'start', 'the stepper’s first run', 20_000);
          writeFileSync(file, '+3600s\n');
          stepper.process.stdin!.write('clock\n');
          const ahead = await waitLine(
            stepper,
            (l) => l.event === 'clock' && Math.abs(l.wallMinusStore!) > 1_000_000,
            'the stepped clock',
          );
          expect(Math.abs(ahead.wallMinusStore! - 3_600_000)).toBeLessThan(2_000);
          stepper.process.stdin!.write('go\n');
          await new Promise((r) => setTimeout(r, 1_200));
          writeFileSync(file, '-3600s\n');
          const end = await waitLine(stepper, (l) => l.event === 'end', 'the long run’s end', 10_000);
          expect(end, JSON.stringify(end)).toMatchObject({
            fireTime: long.fireTime,
            token: long.token,
            aborted: false,
          });
          expect(Math.abs(end.wallMinusStore! + 3_600_000)).toBeLessThan(2_000);
          const after = await store.now();
          await until(() => steadyRuns.some((t) => t > after), 10_000, 'a run after the long one');
          await steady.stop();
          await stopAll([stepper]);

          const stepperRuns = parse(stepper)
            .filter((l) => l.event === 'start')
            .map((l) => l.fireTime!);
          const all = [...stepperRuns, ...steadyRuns];
          expect(all.length).toBe(new Set(all).size);
          const history = await steady.history({ job, limit: 500 });
          const entries = history.filter((h) => h.fireTime.getTime() === long.fireTime);
          expect(entries).toHaveLength(1);
          expect(entries[0]).toMatchObject({ node: 'stepper', attempt: 1, status: 'succeeded' });
          // The run outlived two lease lengths: only keep-alive (monotonic) held its lease.
          const run = entries[0]!;
          expect(run.finishedAt!.getTime() - run.startedAt.getTime()).toBeGreaterThan(4_000);
          const fireTimes = history.map((h) => h.fireTime.getTime());
          expect(fireTimes.length).toBe(new Set(fireTimes).size);
          // The history checker over what both nodes recorded (the stepper's wall clock is off,
          // so its own run lines are not used: the store's history is on the store clock).
          expectHistoryHolds({
            records: recordsFromHistory(history),
            jobs: [{ job, leaseMs: 2_000, overlap: 'skip' }],
          });
        } finally {
          if (stepper.process.exitCode === null) stepper.process.kill('SIGKILL');
          await steady.stop().catch(() => {});
          await other.close();
          await store.close();
        }
      }, 40_000);
    },
  );
}
