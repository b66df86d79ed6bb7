/**
 * A backfill claim waits while a page of the schedule holds a run without a final outcome on
 * record (src/scheduler/claim/gated-runs.ts `pageRunGoing`). A run whose first attempt failed and
 * whose retry ended has ended: read at the page's attempt only, the failure (`willRetry`) kept
 * the backfill waiting until the page's record went.
 */
import { describe, expect, it } from 'vitest';
import { pageRunGoing } from '../src/scheduler/claim/gated-runs.js';
import { encodePageRecord } from '../src/scheduler/claim/page-record.js';
import { encodeHistory } from '../src/scheduler/finish/history.js';
import { keys } from '../src/scheduler/keys.js';
import type { HistoryEntry } from '../src/scheduler/types.js';
import { MemoryStore } from '../src/store/memory.js';

const F = Date.UTC(2026, 11, 6, 9);

async function storeWithPage(): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.put(
    keys.pageRecord('report', 'p1'),
    encodePageRecord({
      job: 'report',
      node: 'a',
      leaseMs: 30_000,
      items: [{ id: 'u1', v: '1', fireTime: F, to: 'due|x', kind: 'run', source: 'schedule' }],
      started: { at: F, claimedAt: F, token: 7, won: [0] },
    }),
  );
  return store;
}

function entry(attempt: number, status: HistoryEntry['status'], willRetry?: boolean): string {
  return encodeHistory({
    job: 'report',
    scheduleId: 'u1',
    fireTime: new Date(F),
    node: 'a',
    attempt,
    token: 7,
    source: attempt === 1 ? 'schedule' : 'retry',
    status,
    startedAt: new Date(F),
    finishedAt: new Date(F + 10),
    ...(willRetry && { willRetry }),
  });
}

describe('pageRunGoing', () => {
  const occ = { job: 'report', scheduleId: 'u1', fireTime: F, shard: undefined };

  it('a run with no outcome, or a failure to be retried, is going; a retry that ended ends it', async () => {
    const store = await storeWithPage();
    expect(await pageRunGoing(store, 'report', 'u1', F + 60_000, 2)).toBe(true);
    await store.put(keys.history(occ, 1), entry(1, 'failed', true));
    expect(await pageRunGoing(store, 'report', 'u1', F + 60_000, 2)).toBe(true);
    await store.put(keys.history(occ, 2), entry(2, 'failed', true));
    expect(await pageRunGoing(store, 'report', 'u1', F + 60_000, 2)).toBe(true);
    await store.put(keys.history(occ, 3), entry(3, 'succeeded'));
    expect(await pageRunGoing(store, 'report', 'u1', F + 60_000, 2)).toBe(false);
    // Another schedule's page holds nothing of this one.
    expect(await pageRunGoing(store, 'report', 'u2', F + 60_000, 2)).toBe(false);
  });

  it('a first attempt that ended for good ends it', async () => {
    const store = await storeWithPage();
    await store.put(keys.history(occ, 1), entry(1, 'failed'));
    expect(await pageRunGoing(store, 'report', 'u1', F + 60_000, 0)).toBe(false);
  });
});
