/**
 * A backfill run that dies is recovered like any run — and its recovery, like the backfill run
 * itself, leaves the job's high-water mark where it was. The mark is a plain put of a fire time
 * (claim/high-water.ts): a recovery of a run from the past that wrote it moved the mark back, and
 * a node started afterwards took the fire times above it for missed, its misfire policy replaying
 * one that had run already (its "done" hold long over).
 */
import { describe, expect, it } from 'vitest';
import { createScheduler, type Scheduler } from '../src/scheduler/index.js';
import { keys } from '../src/scheduler/keys.js';
import type { JobContext } from '../src/scheduler/types.js';
import { MemoryStore } from '../src/store/memory.js';
import { until } from './harness/scheduler-suite.js';

const HOUR = 3_600_000;

describe('backfill: a run that dies is recovered without moving the high-water mark back', () => {
  it('the recovery runs the fire time once more (attempt 2, source recover) and the mark stays', async () => {
    const store = new MemoryStore();
    const job = 'hourly-report';
    const nodes: Scheduler[] = [];
    try {
      const runs: { node: string; fireTime: number; attempt: number; source?: string }[] = [];
      let hang: (() => void) | undefined;
      const handler = (node: string) => (ctx: JobContext) => {
        runs.push({ node, fireTime: ctx.fireTime.getTime(), attempt: ctx.attempt });
        // The first backfill run hangs and ignores its signal: stop() gives up on it (abandoned).
        if (node === 'a')
          return new Promise<void>((resolve) => {
            hang = resolve;
          });
        return undefined;
      };
      const a = createScheduler({ store, node: 'a', stopTimeout: '100ms', pollInterval: '200ms' });
      nodes.push(a);
      a.define(job, { every: '1h', lockAtMostFor: '1s' }, handler('a'));
      await a.start();
      // The job ran its latest fire time on time: the mark is there.
      const latest = Math.floor((await store.now()) / HOUR) * HOUR;
      await store.put(keys.highWater(job, undefined), String(latest));
      const from = new Date(latest - 3 * HOUR);
      const { queued } = await a.backfill({ job, from, to: new Date(latest - 2 * HOUR) });
      expect(queued).toBe(1);
      await until(() => runs.length === 1, 10_000, 'the backfill run');
      expect(runs[0]!.fireTime).toBe(from.getTime());
      await a.stop(); // gives up after 100 ms: the run is abandoned, its in-flight record left
      const b = createScheduler({ store, node: 'b', pollInterval: '200ms' });
      nodes.push(b);
      b.define(job, { every: '1h', lockAtMostFor: '1s' }, handler('b'));
      await b.start();
      await until(() => runs.length === 2, 10_000, 'the recovery');
      const deadline = performance.now() + 10_000;
      while (!(await b.history({ job })).some((h) => h.status === 'succeeded')) {
        if (performance.now() > deadline) throw new Error('the recovery is not on record');
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(runs[1]).toMatchObject({ node: 'b', fireTime: from.getTime(), attempt: 2 });
      const history = await b.history({ job });
      expect(history.map((h) => [h.attempt, h.status, h.source])).toEqual([
        [2, 'succeeded', 'recover'],
        [1, 'abandoned', 'backfill'],
      ]);
      expect(Number(await store.get(keys.highWater(job, undefined)))).toBe(latest);
      hang?.();
    } finally {
      await Promise.all(nodes.map((n) => n.stop()));
    }
  }, 30_000);
});
