/**
 * A claim won a whole lease after its fire time, of a fire time that already ran to its end but
 * whose "done" hold is gone: its run stored the outcome only after its lease had lapsed (a store
 * outage during the run), so the store refused the hold and the occurrence was free to win. Found
 * by the chaos soak (seed 149154046, PostgreSQL): a 40 s store restart during a run of a sharded
 * job; once the store was back, two nodes whose claims of that fire time had waited through the
 * outage won its three shards 200 ms after the success was stored and ran them again, attempt 1.
 *
 * Here the store is put in that state directly — the fire time's history says succeeded, no lease,
 * no in-flight record — with the job's high-water mark just below it, so that the node's misfire
 * scan replays it (run-once): a claim of it won long after the fire time. It must be settled
 * "done", not run.
 */
import { afterEach, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';
import { MemoryStore } from '../src/index.js';
import { createScheduler } from '../src/scheduler/index.js';
import { keys } from '../src/scheduler/keys.js';
import { recordEvents } from './harness/events.js';
import { until } from './harness/scheduler-suite.js';
import { putHistoryEntry } from './harness/stored-history.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c().catch(() => {});
});

it('memory: a fire time that succeeded after its lease lapsed is not run again by a late claim', async () => {
  const store = new MemoryStore();
  const job = `late-claim-${randomId(5)}`;
  // Every hour: the last fire time is the only one missed, and run-once replays it.
  const now = await store.now();
  const F = Math.floor(now / 3_600_000) * 3_600_000;
  const occ = { job, scheduleId: undefined, fireTime: F, shard: undefined };
  await putHistoryEntry(store, occ, {
    node: 'earlier-node',
    status: 'succeeded',
    startedAt: new Date(F + 5),
    finishedAt: new Date(F + 40_000),
    leaseLapsed: true,
  });
  await store.put(keys.highWater(job, undefined), String(F - 1));
  const scheduler = createScheduler({ store, node: 'late-node', pollInterval: '100ms' });
  cleanup.push(() => scheduler.stop());
  let runs = 0;
  scheduler.define(job, { cron: '0 * * * *', lockAtMostFor: '3s', misfireThreshold: '1s' }, async () => {
    runs++;
  });
  const events = recordEvents(scheduler);
  await scheduler.start();
  // The replay is announced, and claimed: the occurrence is then held "done" by this node.
  await until(() => events.misfired.some((e) => e.fireTime.getTime() === F), 10_000, 'the replay of F');
  let held = await store.inspect(keys.occurrence(occ));
  for (const end = performance.now() + 10_000; held?.owner !== 'late-node' && performance.now() < end; ) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    held = await store.inspect(keys.occurrence(occ));
  }
  expect(held?.owner, 'the late claim of F, settled').toBe('late-node');
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(runs).toBe(0);
  expect(events.started).toEqual([]);
  held = await store.inspect(keys.occurrence(occ));
  // Held "done" for the hour (the done hold), not a run's lease of lockAtMostFor.
  expect(held!.expiresAt).toBeGreaterThan((await store.now()) + 60_000);
  expect(await store.get(keys.inflight(occ))).toBeNull();
  const history = await scheduler.history({ job, limit: 10 });
  expect(history.map((h) => [h.attempt, h.status, h.token])).toEqual([[1, 'succeeded', 1]]);
}, 30_000);
