/**
 * `scheduler.next(job)` and `scheduler.schedules.next(id)` (issue 32 item 9) on one backend per
 * test file: `describeNext(name, openStore)`. What next() says will start is what then starts:
 * each predicted start is a run's scheduledAt (jitter per fire, so every start differs), asked of
 * a scheduler that defines nothing (it reads the job record the nodes write). Paused: nothing.
 * One node, `every: '1s'`, about 3 s per test.
 */

import { describe, expect, it } from 'vitest';
import { OncelyError } from '../../src/core/errors.js';
import { randomId } from '../../src/core/ids.js';
import { compileJitter, scheduledAt } from '../../src/schedule/jitter.js';
import { createScheduler } from '../../src/scheduler/index.js';
import { keys } from '../../src/scheduler/keys.js';
import type { JobContext } from '../../src/scheduler/types.js';
import type { Store } from '../../src/store/types.js';
import { until } from './scheduler-suite.js';
import { definedWhere } from './suite-kit.js';

export type OpenStore = () => Promise<Store>;

export interface NextSuiteOptions {
  /** Skip the suite with this reason (server unavailable outside CI). */
  skip?: string | undefined;
  /** Also run the backend-independent tests (bad input, the pure sums); one file is enough. */
  validation?: boolean;
}

const JITTER = { max: '600ms', per: 'fire' } as const;

function code(err: unknown): string | undefined {
  return err instanceof OncelyError ? err.code : undefined;
}

export function describeNext(name: string, open: OpenStore, options: NextSuiteOptions = {}): void {
  (options.skip !== undefined ? describe.skip : describe.concurrent)(`next: ${name}`, () => {
    /** A running node and a reader that defines nothing, on stores of their own. */
    async function setup() {
      const [nodeStore, readerStore] = [await open(), await open()];
      const node = createScheduler({
        store: nodeStore,
        node: `n0-${randomId(4)}`,
        pollInterval: '100ms',
        logger: false,
      });
      const reader = createScheduler({ store: readerStore, node: 'reader', logger: false });
      const started: JobContext[] = [];
      const stop = async () => {
        await node.stop().catch(() => {});
        await Promise.all([nodeStore.close(), readerStore.close()].map((p) => p.catch(() => {})));
      };
      return { node, reader, readerStore, started, stop };
    }

    it("a job's own trigger: next() lists the starts that then run, jitter applied, nothing while paused", async () => {
      const { node, reader, readerStore, started, stop } = await setup();
      const job = `next-${randomId()}`;
      try {
        node.define(job, { every: '1s', jitter: JITTER, misfireThreshold: '15s' }, (ctx) => {
          started.push(ctx);
        });
        await node.start();
        // Asked once the node has taken its first look at the job (its first tick writes the job's
        // high-water mark, due/due.ts): asked before, next() counts from the job record's time —
        // the node's start — and lists a fire time between that and the node's first tick that
        // the node counts as before its start (seen in CI, sqlite and mysql).
        const marked = async () => (await readerStore.get(keys.highWater(job, undefined))) !== null;
        await until(marked, 10_000, "the job's high-water mark");
        const predicted = await reader.next(job, { count: 3 });
        const now = await readerStore.now();
        expect(predicted).toHaveLength(3);
        for (let i = 0; i < 3; i++) {
          const start = predicted[i]!.getTime();
          // Each start is its fire time (a whole second) plus the pure function's offset.
          const fireTime = Math.floor(start / 1000) * 1000;
          expect(start).toBe(
            scheduledAt(compileJitter(JITTER, undefined, 't'), job, undefined, fireTime, fireTime + 1000),
          );
          if (i > 0) expect(start).toBeGreaterThan(predicted[i - 1]!.getTime());
        }
        expect(predicted[0]!.getTime()).toBeGreaterThanOrEqual(now - 15_000);
        const wanted = predicted.slice(0, 2).map((d) => d.getTime());
        await until(
          () => wanted.every((t) => started.some((c) => c.scheduledAt.getTime() === t)),
          15_000,
          `runs starting at ${wanted.map((t) => new Date(t).toISOString()).join(', ')}`,
        );
        await node.pause(job);
        expect(await reader.next(job)).toEqual([]);
        await node.resume(job);
        expect(await reader.next(job)).toHaveLength(5);
      } finally {
        await stop();
      }
    });

    it('a stored schedule: schedules.next() lists the starts that then run, jitter applied', async () => {
      const { node, reader, started, stop } = await setup();
      const job = `next-${randomId()}`;
      const id = `next-${randomId()}`;
      try {
        node.define(job, { misfireThreshold: '15s' }, (ctx) => {
          started.push(ctx);
        });
        await node.start();
        await node.schedules.upsert({ id, job, every: '1s', jitter: JITTER });
        const predicted = await reader.schedules.next(id, { count: 3 });
        expect(predicted).toHaveLength(3);
        for (let i = 0; i < 3; i++) {
          const start = predicted[i]!.getTime();
          const fireTime = Math.floor(start / 1000) * 1000;
          expect(start).toBe(
            scheduledAt(compileJitter(JITTER, undefined, 't'), job, id, fireTime, fireTime + 1000),
          );
        }
        const wanted = predicted.slice(0, 2).map((d) => d.getTime());
        await until(
          () =>
            wanted.every((t) => started.some((c) => c.scheduleId === id && c.scheduledAt.getTime() === t)),
          15_000,
          `schedule runs starting at ${wanted.map((t) => new Date(t).toISOString()).join(', ')}`,
        );
        await node.pause(job);
        expect(await reader.schedules.next(id)).toEqual([]);
      } finally {
        await stop();
      }
    });

    definedWhere(options.validation)(
      'bad count, unknown job or id: OncelyError naming what to fix',
      async () => {
        const { node, reader, stop } = await setup();
        const job = `next-${randomId()}`;
        try {
          node.define(job, { every: '1s' }, () => {});
          await node.start();
          for (const count of [0, 1001, 1.5, Number.NaN, '3' as unknown as number]) {
            const err = await reader.next(job, { count }).catch((e: unknown) => e);
            expect(code(err), String(count)).toBe('INVALID_ARGUMENT');
            expect((err as Error).message).toMatch(/count must be a whole number from 1 to 1000/);
          }
          expect(code(await reader.next(job, { limit: 3 } as never).catch((e: unknown) => e))).toBe(
            'INVALID_ARGUMENT',
          );
          expect(code(await reader.next('').catch((e: unknown) => e))).toBe('INVALID_ARGUMENT');
          const missing = await reader.next(`${job}-nope`).catch((e: unknown) => e);
          expect(code(missing)).toBe('NOT_FOUND');
          expect((missing as Error).message).toContain(`${job}-nope`);
          expect(code(await reader.schedules.next('no-such-id').catch((e: unknown) => e))).toBe('NOT_FOUND');
          expect(code(await reader.schedules.next('x', { count: 0 }).catch((e: unknown) => e))).toBe(
            'INVALID_ARGUMENT',
          );
          // Default 5; 1,000 at most; ascending 1 s apart without jitter.
          const five = await reader.next(job);
          expect(five).toHaveLength(5);
          expect(five[1]!.getTime() - five[0]!.getTime()).toBe(1000);
          expect(await reader.next(job, { count: 1000 })).toHaveLength(1000);
          // A job without a trigger of its own runs only from stored schedules and trigger().
          const bare = `next-${randomId()}`;
          node.define(bare, {}, () => {});
          let answer: unknown;
          for (let i = 0; i < 50 && !Array.isArray(answer); i++) {
            answer = await reader.next(bare).catch((e: unknown) => e);
            await new Promise((r) => setTimeout(r, 50));
          }
          expect(answer).toEqual([]);
        } finally {
          await stop();
        }
      },
    );
  });
}
