/**
 * `schedules.next(id)` at the edges of "what will really run" (observe/next-runs.ts), on the
 * memory store with no node running, so nothing claims: a fire time before the upsert is never
 * listed, even while its jittered start is still ahead; a fire time whose start has passed is
 * listed while its due entry waits (due, not yet claimed) and within the misfire threshold, and
 * not after it (a misfire, left to the misfire policy).
 */
import { describe, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';
import { openStore } from '../src/index.js';
import { compileJitter, jitterOffset } from '../src/schedule/jitter.js';
import { createScheduler } from '../src/scheduler/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('schedules.next at the edges', () => {
  it('skips a fire time before the upsert; lists a due unclaimed one within the threshold only', async () => {
    const store = await openStore(`memory:${randomId()}`);
    try {
      const scheduler = createScheduler({ store, logger: false });
      const job = 'edge';
      const jitter = compileJitter('900ms', undefined, 't')!;
      // An id whose stable offset is late in the second (≥ 700 ms).
      let id = '';
      let offset = 0;
      for (let i = 0; offset < 700; i++) {
        id = `edge-${i}`;
        offset = jitterOffset(jitter, job, id, 0, 1000);
      }
      // Upsert early in a second: the fire time at that second's start has its start still ahead.
      while ((await store.now()) % 1000 > 300) await sleep(20);
      const upsertedAt = await store.now();
      await scheduler.schedules.upsert({ id, job, every: '1s', jitter: '900ms' });
      const before = Math.floor(upsertedAt / 1000) * 1000;
      const predicted = (await scheduler.schedules.next(id, { count: 3 })).map((d) => d.getTime());
      expect(predicted[0]).toBe(before + 1000 + offset);
      expect(predicted).toEqual([0, 1, 2].map((k) => before + 1000 * (k + 1) + offset));
      // Its start passes, nobody claims it: still listed within the threshold (1 s by default)…
      while ((await store.now()) < predicted[0]! + 200) await sleep(20);
      expect((await scheduler.schedules.next(id, { count: 1 }))[0]!.getTime()).toBe(predicted[0]);
      // …and not once it is a misfire.
      while ((await store.now()) < predicted[0]! + 1100) await sleep(20);
      const [first] = await scheduler.schedules.next(id, { count: 1 });
      expect(first!.getTime()).toBeGreaterThan(predicted[0]!);
    } finally {
      await store.close();
    }
  });
});
