/**
 * startAt, endAt and maxRuns (issue 32 item 2) on one backend per test file:
 * `describeBounds(name, openStore)`. Two nodes each, every 500 ms, a few seconds per test: no fire
 * time before startAt or after endAt (the handler's ctx.fireTime), and a schedule with maxRuns 3
 * starts exactly 3 runs across the fleet, then shows remainingRuns 0, ended, and next() empty.
 */

import { describe, expect, it } from 'vitest';
import { randomId } from '../../src/core/ids.js';
import type { JobContext } from '../../src/scheduler/types.js';
import type { Store } from '../../src/store/types.js';
import { until } from './scheduler-suite.js';
import { definedWhere, expectInvalid, openFleet } from './suite-kit.js';

export type OpenStore = () => Promise<Store>;

export interface BoundsSuiteOptions {
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
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until the store's clock is past `t`. */
async function untilStoreTime(store: Store, t: number): Promise<void> {
  for (let now = await store.now(); now <= t; now = await store.now())
    await sleep(Math.min(1_000, t - now + 20));
}

export function describeBounds(name: string, open: OpenStore, options: BoundsSuiteOptions = {}): void {
  (options.skip !== undefined ? describe.skip : describe.concurrent)(`bounds: ${name}`, () => {
    async function fleet(count: number) {
      const { stores, nodes, stop } = await openFleet(open, count);
      const starts: Start[] = [];
      const handler = async (ctx: JobContext) => {
        starts.push({
          job: ctx.job,
          node: ctx.node,
          scheduleId: ctx.scheduleId,
          fireTime: ctx.fireTime.getTime(),
        });
      };
      return { stores, nodes, starts, handler, stop };
    }

    it('stored schedules: maxRuns 3 starts exactly 3 across two nodes (pages and per-occurrence claims), then ended with remainingRuns 0 and next() empty; startAt and endAt bound the fire times', async () => {
      const f = await fleet(2);
      const job = `bnd-${randomId(5)}`;
      // overlap 'queue' is claimed occurrence by occurrence (claim/eligible.ts): the other path.
      const queued = `${job}-q`;
      try {
        for (const n of f.nodes) {
          n.define(job, {}, f.handler);
          n.define(queued, { overlap: 'queue' }, f.handler);
        }
        await Promise.all(f.nodes.map((n) => n.start()));
        const now = await f.stores[0]!.now();
        const startAt = now + 2_000;
        const endAt = now + 1_500;
        await f.nodes[0]!.schedules.upsert([
          { id: `${job}:m`, job, every: '500ms', maxRuns: 3 },
          { id: `${job}:q`, job: queued, every: '500ms', maxRuns: 2 },
          { id: `${job}:s`, job, every: '500ms', startAt: new Date(startAt) },
          { id: `${job}:e`, job, every: '500ms', endAt: new Date(endAt).toISOString() },
          // Excluded fire times are recorded skipped, not run: they do not count (pages, then one by one).
          { id: `${job}:x`, job, every: '500ms', maxRuns: 2, exclude: [{ from: now, to: startAt }] },
          { id: `${job}:y`, job: queued, every: '500ms', maxRuns: 1, exclude: [{ from: now, to: startAt }] },
        ]);
        const m = await f.nodes[1]!.schedules.get(`${job}:m`);
        expect(m?.maxRuns).toBe(3);
        expect(m?.remainingRuns).toBeGreaterThanOrEqual(2);
        expect(m?.ended).toBe(false);
        // At most the runs left (one may start between the two reads).
        const upcoming = (await f.nodes[1]!.schedules.next(`${job}:m`, { count: 10 })).length;
        expect(upcoming).toBeLessThanOrEqual(m!.remainingRuns!);
        expect(upcoming).toBeGreaterThanOrEqual(m!.remainingRuns! - 1);
        const [firstOfS] = await f.nodes[1]!.schedules.next(`${job}:s`, { count: 1 });
        expect(firstOfS!.getTime()).toBeGreaterThanOrEqual(startAt);
        const of = (id: string) => f.starts.filter((s) => s.scheduleId === `${job}:${id}`);
        await until(
          () =>
            of('m').length >= 3 &&
            of('q').length >= 2 &&
            of('s').length >= 2 &&
            of('x').length >= 2 &&
            of('y').length >= 1,
          15_000,
          'the bounded schedules to run',
        );
        // Past endAt and several fire times after the third run: nothing more of m, q or e.
        await untilStoreTime(f.stores[0]!, endAt + 1_000);
        await sleep(1_500);
        expect(of('m').length).toBe(3);
        expect(new Set(of('m').map((s) => s.fireTime)).size).toBe(3);
        expect(of('q').length).toBe(2);
        expect(of('x').length).toBe(2);
        expect(of('y').length).toBe(1);
        for (const s of [...of('x'), ...of('y')]) expect(s.fireTime).toBeGreaterThanOrEqual(startAt);
        for (const s of of('s')) expect(s.fireTime).toBeGreaterThanOrEqual(startAt);
        for (const s of of('e')) expect(s.fireTime).toBeLessThanOrEqual(endAt);
        for (const id of ['m', 'q', 'x', 'y']) {
          const ended = await f.nodes[1]!.schedules.get(`${job}:${id}`);
          expect(ended?.remainingRuns).toBe(0);
          expect(ended?.ended).toBe(true);
          expect(await f.nodes[0]!.schedules.next(`${job}:${id}`)).toEqual([]);
        }
        const e = await f.nodes[0]!.schedules.get(`${job}:e`);
        expect(e?.ended).toBe(true);
        expect(e?.remainingRuns).toBeUndefined();
        expect(await f.nodes[0]!.schedules.next(`${job}:e`)).toEqual([]);
        // Ended schedules stay listed, shown ended; one without bounds shows neither field.
        const listed = await f.nodes[0]!.schedules.list({ job });
        expect(listed.find((x) => x.id === `${job}:m`)).toMatchObject({ remainingRuns: 0, ended: true });
        expect(listed.find((x) => x.id === `${job}:s`)).not.toHaveProperty('remainingRuns');
        // An upsert starts the count again.
        await f.nodes[0]!.schedules.upsert({ id: `${job}:m`, job, every: '500ms', maxRuns: 1 });
        await until(() => of('m').length >= 4, 10_000, 'the re-upserted schedule to run once');
        await sleep(1_200);
        expect(of('m').length).toBe(4);
        expect((await f.nodes[1]!.schedules.get(`${job}:m`))?.remainingRuns).toBe(0);
      } finally {
        await f.stop();
      }
    }, 40_000);

    it("a job's own trigger: no fire time before startAt or after endAt; next() applies them", async () => {
      const f = await fleet(2);
      const job = `bndj-${randomId(5)}`;
      try {
        const now = await f.stores[0]!.now();
        const startAt = now + 1_500;
        const endAt = now + 3_500;
        for (const n of f.nodes)
          n.define(job, { every: '500ms', startAt, endAt: new Date(endAt) }, f.handler);
        await Promise.all(f.nodes.map((n) => n.start()));
        const [first] = await f.nodes[0]!.next(job, { count: 1 });
        expect(first!.getTime()).toBeGreaterThanOrEqual(startAt);
        await untilStoreTime(f.stores[0]!, endAt + 1_000);
        const runs = f.starts.filter((s) => s.job === job);
        expect(runs.length).toBeGreaterThanOrEqual(2);
        for (const s of runs) {
          expect(s.fireTime).toBeGreaterThanOrEqual(startAt);
          expect(s.fireTime).toBeLessThanOrEqual(endAt);
        }
        expect(new Set(runs.map((s) => s.fireTime)).size).toBe(runs.length);
        expect(await f.nodes[1]!.next(job)).toEqual([]);
      } finally {
        await f.stop();
      }
    }, 30_000);

    definedWhere(options.validation)(
      'bad startAt, endAt or maxRuns is refused with INVALID_ARGUMENT naming the field',
      async () => {
        const f = await fleet(1);
        const n = f.nodes[0]!;
        const job = `bndbad-${randomId(5)}`;
        const refused = expectInvalid;
        try {
          refused(() => n.define('b1', { every: '1s', startAt: 'soon' }, () => {}), /startAt must be a Date/);
          refused(
            () => n.define('b2', { every: '1s', startAt: 2000, endAt: 1000 }, () => {}),
            /endAt .* must be after startAt/,
          );
          refused(() => n.define('b3', { startAt: 1000 }, () => {}), /startAt needs the job's own trigger/);
          refused(
            () => n.define('b4', { every: '1s', maxRuns: 3 }, () => {}),
            /maxRuns is not supported on define\(\)/,
          );
          for (const [fields, pattern] of [
            [{ maxRuns: 0 }, /entry 0: maxRuns: .*maxRuns must be a whole number from 1 to 1000000000/],
            [{ maxRuns: 2.5 }, /maxRuns must be a whole number/],
            [{ maxRuns: '3' }, /maxRuns must be a whole number/],
            [{ endAt: 'tomorrow' }, /entry 0: endAt: .*endAt must be a Date/],
            [
              { startAt: '2030-01-02T00:00:00Z', endAt: '2030-01-01T00:00:00Z' },
              /endAt .* must be after startAt/,
            ],
          ] as const) {
            await expect(
              n.schedules.upsert({ id: `x-${job}`, job, every: '5s', ...fields } as never),
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
