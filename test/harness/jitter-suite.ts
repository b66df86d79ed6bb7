/**
 * Jitter (issue 32 item 1) on one backend per test file: `describeJitter(name, openStore)`. Each
 * fire time runs once, at its fire time plus the offset every node computes alike
 * (schedule/jitter.ts), never before it on the store clock; ctx.scheduledAt and history's
 * scheduledAt say so. Two nodes each, short intervals, a few seconds per test.
 */

import { describe, expect, it } from 'vitest';
import { randomId } from '../../src/core/ids.js';
import { compileJitter, type Jitter, jitterOffset } from '../../src/schedule/jitter.js';
import type { JobContext } from '../../src/scheduler/types.js';
import type { Store } from '../../src/store/types.js';
import { until } from './scheduler-suite.js';
import { definedWhere, expectInvalid, openFleet } from './suite-kit.js';

export type OpenStore = () => Promise<Store>;

export interface JitterSuiteOptions {
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
  scheduledAt: number;
  /** The store's clock when the handler started. */
  storeNow: number;
}

/** The offset every node must have used: the pure function, with the next fire time `intervalMs` later. */
function expectedAt(
  jitter: Jitter,
  job: string,
  scheduleId: string | undefined,
  fireTime: number,
  intervalMs: number,
) {
  return (
    fireTime +
    jitterOffset(compileJitter(jitter, undefined, 'test'), job, scheduleId, fireTime, fireTime + intervalMs)
  );
}

export function describeJitter(name: string, open: OpenStore, options: JitterSuiteOptions = {}): void {
  (options.skip !== undefined ? describe.skip : describe.concurrent)(`jitter: ${name}`, () => {
    async function fleet(count: number) {
      const { stores, nodes, halt, stop } = await openFleet(open, count);
      const starts: Start[] = [];
      const handler = (i: number) => async (ctx: JobContext) => {
        const storeNow = await stores[i]!.now();
        starts.push({
          job: ctx.job,
          node: ctx.node,
          scheduleId: ctx.scheduleId,
          fireTime: ctx.fireTime.getTime(),
          scheduledAt: ctx.scheduledAt.getTime(),
          storeNow,
        });
      };
      return { stores, nodes, starts, handler, halt, stop };
    }

    /** Each (schedule, fire time) once, at the offset of the pure function, no earlier on the store clock. */
    function expectOnTime(
      starts: Start[],
      job: string,
      jitterOf: (id: string | undefined) => Jitter,
      intervalMs: number,
    ) {
      const seen = new Set<string>();
      for (const s of starts) {
        const key = `${s.scheduleId}|${s.fireTime}`;
        expect(seen.has(key), `${key} ran twice`).toBe(false);
        seen.add(key);
        expect(s.scheduledAt).toBe(
          expectedAt(jitterOf(s.scheduleId), job, s.scheduleId, s.fireTime, intervalMs),
        );
        expect(s.storeNow).toBeGreaterThanOrEqual(s.scheduledAt);
      }
    }

    it("a job's own trigger: each fire time once, at fireTime + its offset (per schedule, then per fire)", async () => {
      const f = await fleet(2);
      const job = `jit-${randomId(5)}`;
      const perFire = `${job}-f`;
      const stable: Jitter = '1500ms';
      const fresh: Jitter = { max: '900ms', per: 'fire' };
      try {
        for (const [i, n] of f.nodes.entries()) {
          n.define(job, { every: '2s', jitter: stable }, f.handler(i));
          n.define(perFire, { every: '1s', jitter: fresh }, f.handler(i));
        }
        await Promise.all(f.nodes.map((n) => n.start()));
        const of = (name: string) => f.starts.filter((s) => s.job === name);
        await until(() => of(job).length >= 2 && of(perFire).length >= 4, 15_000, 'jittered runs');
        await f.halt();
        expectOnTime(of(job), job, () => stable, 2000);
        expectOnTime(of(perFire), perFire, () => fresh, 1000);
        // Per schedule: one offset for every fire time of the job; per fire: they differ.
        expect(new Set(of(job).map((s) => s.scheduledAt - s.fireTime)).size).toBe(1);
        expect(new Set(of(perFire).map((s) => s.scheduledAt - s.fireTime)).size).toBeGreaterThan(1);
        const history = await f.nodes[0]!.history({ job, limit: 20 });
        const done = history.filter((e) => e.status === 'succeeded');
        expect(done.length).toBeGreaterThanOrEqual(2);
        for (const e of done) {
          expect(e.scheduledAt?.getTime()).toBe(
            expectedAt(stable, job, undefined, e.fireTime.getTime(), 2000),
          );
          expect(e.startedAt.getTime()).toBeGreaterThanOrEqual(e.scheduledAt!.getTime());
        }
      } finally {
        await f.stop();
      }
    }, 30_000);

    it('stored schedules: each fire time once, at fireTime + the schedule’s offset (pages in play where the store has them)', async () => {
      const f = await fleet(2);
      const job = `jits-${randomId(5)}`;
      const jitters: Record<string, Jitter> = {
        a: '1500ms',
        b: '1500ms',
        c: { max: '1500ms', per: 'fire' },
        plain: 0,
      };
      try {
        for (const [i, n] of f.nodes.entries()) n.define(job, {}, f.handler(i));
        await Promise.all(f.nodes.map((n) => n.start()));
        await f.nodes[0]!.schedules.upsert(
          Object.entries(jitters).map(([id, jitter]) => ({ id, job, every: '2s', jitter })),
        );
        expect((await f.nodes[1]!.schedules.get('c'))?.jitter).toEqual({ max: '1500ms', per: 'fire' });
        await until(
          () =>
            ['a', 'b', 'c', 'plain'].every((id) => f.starts.filter((s) => s.scheduleId === id).length >= 2),
          15_000,
          'two runs of every schedule',
        );
        await f.halt();
        expectOnTime(f.starts, job, (id) => jitters[id!]!, 2000);
        const offsets = (id: string) =>
          new Set(f.starts.filter((s) => s.scheduleId === id).map((s) => s.scheduledAt - s.fireTime));
        expect(offsets('a').size).toBe(1);
        expect([...offsets('plain')]).toEqual([0]);
        const history = await f.nodes[1]!.history({ job, limit: 50 });
        for (const e of history.filter((x) => x.status === 'succeeded')) {
          const at = expectedAt(jitters[e.scheduleId!]!, job, e.scheduleId, e.fireTime.getTime(), 2000);
          expect(e.scheduledAt?.getTime()).toBe(at);
          expect(e.startedAt.getTime()).toBeGreaterThanOrEqual(at);
        }
      } finally {
        await f.stop();
      }
    }, 30_000);

    definedWhere(options.validation)(
      'bad jitter is refused with INVALID_ARGUMENT saying what to fix',
      async () => {
        const f = await fleet(1);
        const n = f.nodes[0]!;
        const job = `jitbad-${randomId(5)}`;
        const refused = expectInvalid;
        try {
          refused(() => n.define('bad1', { every: '1s', jitter: -1 }, () => {}), /non-negative/);
          refused(() => n.define('bad2', { every: '1s', jitter: 'soon' }, () => {}), /not a duration/);
          refused(() => n.define('bad3', { every: '1s', jitter: '1s' }, () => {}), /less than the interval/);
          refused(() => n.define('bad4', { jitter: '1s' }, () => {}), /needs the job's own trigger/);
          refused(
            () =>
              n.define('bad5', { cron: '0 9 * * *', jitter: { max: '1m', per: 'day' as 'fire' } }, () => {}),
            /per must be 'schedule' or 'fire'/,
          );
          for (const [jitter, pattern] of [
            ['5s', /entry 0: jitter: .*less than the interval/],
            [{ max: true }, /entry 0: jitter: .*max is missing|jitter must be/],
            ['8d', /at most 7 days/],
          ] as const) {
            await expect(
              n.schedules.upsert({ id: `x-${job}`, job, every: '5s', jitter: jitter as Jitter }),
            ).rejects.toThrow(pattern);
          }
          expect(await n.schedules.count({ job })).toBe(0);
        } finally {
          await f.stop();
        }
      },
    );
  });
}
