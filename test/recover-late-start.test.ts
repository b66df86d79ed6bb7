/**
 * A run's start batch (its in-flight record) whose answer was lost, retried onto a stalled link,
 * can land after a recovery ran the next attempt, stored its success and deleted the record: the
 * record is back, naming the attempt that recovery recorded abandoned. Once the occurrence's
 * "done" hold is over (an hour or more), nothing holds the occurrence, and recovery looks at the
 * record again. It must find the later attempt's success and only clean up — not run the next
 * attempt again after it. Built here as the store holds it then, on the memory store.
 */
import { afterEach, expect, it } from 'vitest';
import { openStore } from '../src/index.js';
import { encodeHistory } from '../src/scheduler/finish/history.js';
import { createScheduler, type Scheduler } from '../src/scheduler/index.js';
import { keys } from '../src/scheduler/keys.js';
import type { HistoryEntry } from '../src/scheduler/types.js';
import { eventually } from './harness/faulty-store.js';

const nodes: Scheduler[] = [];
afterEach(async () => {
  for (const s of nodes.splice(0)) await s.stop();
});

it('an in-flight record that landed after its recovery succeeded is cleaned up, not run again', async () => {
  const store = await openStore(`memory:late-start-${Math.random().toString(36).slice(2)}`);
  const job = 'late-start';
  const now = await store.now();
  const fireTime = now - 2 * 3_600_000;
  const occ = { job, scheduleId: undefined, fireTime, shard: undefined };
  const entry = (attempt: number, token: number, status: 'abandoned' | 'succeeded'): HistoryEntry => ({
    job,
    fireTime: new Date(fireTime),
    node: attempt === 1 ? 'node-a' : 'node-b',
    attempt,
    token,
    source: attempt === 1 ? 'schedule' : 'recover',
    status,
    startedAt: new Date(fireTime + 10),
    finishedAt: new Date(fireTime + 5_000),
  });
  await store.put(keys.history(occ, 1), encodeHistory(entry(1, 7, 'abandoned')));
  await store.put(keys.history(occ, 2), encodeHistory(entry(2, 9, 'succeeded')));
  // Node a's start batch, landed late: attempt 1, its lease long over.
  await store.put(
    keys.inflight(occ),
    JSON.stringify({
      job,
      fireTime,
      attempt: 1,
      token: 7,
      node: 'node-a',
      source: 'schedule',
      startedAt: fireTime + 10,
      claimedAt: fireTime,
      leaseMs: 3_000,
    }),
  );
  const ran: number[] = [];
  const node = createScheduler({ store, node: 'node-c', pollInterval: '200ms', logger: false });
  nodes.push(node);
  node.define(job, { cron: '0 0 1 1 *', lockAtMostFor: '3s' }, (ctx) => {
    ran.push(ctx.attempt);
  });
  await node.start();
  await eventually(async () => (await store.get(keys.inflight(occ))) === null, 5_000, 'the record to go');
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(ran).toEqual([]);
  const history = await node.history({ job, limit: 10 });
  expect(history.map((e) => `${e.attempt} ${e.status}`).sort()).toEqual(['1 abandoned', '2 succeeded']);
});
