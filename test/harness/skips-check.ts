/**
 * What the no-lost-fire-times fault tests share (test/faults-skips.test.ts,
 * test/faults-sigstop.test.ts): the job as a user tried it, the strict history check of its run,
 * and the fire times a node goes first for.
 */
import { expect } from 'vitest';
import type { Store } from '../../src/index.js';
import { Spread } from '../../src/scheduler/control/spread.js';
import type { HistoryEntry } from '../../src/scheduler/index.js';
import {
  expectedOccurrences,
  type RunRecord,
  recordsFromHistory,
  type SkipRecord,
  skipsFromHistory,
} from '../../src/testing/index.js';
import { sleep } from '../../src/testing/suite-context.js';
import { expectHistoryHolds } from './history.js';

export const JOB = { every: '1s', lockAtMostFor: '4s', overlap: 'skip', misfire: 'run-once' } as const;
export const LEASE_MS = 4_000;

/** What the strict checker needs from a finished run of the job: its history, and each skipped entry's reason. */
export function checkStored(
  job: string,
  history: HistoryEntry[],
  fromLines: { records: RunRecord[]; skips: SkipRecord[] },
  window: { from: number; to: number },
) {
  // Every skipped entry says why.
  expect(
    history.filter((h) => h.status === 'skipped' && (h.reason === undefined || h.by === undefined)),
  ).toEqual([]);
  return expectHistoryHolds({
    records: [...fromLines.records, ...recordsFromHistory(history)],
    skips: [...fromLines.skips, ...skipsFromHistory(history)],
    jobs: [{ job, leaseMs: LEASE_MS, overlap: JOB.overlap }],
    expected: expectedOccurrences(job, { every: JOB.every }, window),
  });
}

/**
 * The next `count` fire times of `job` (every second, from `after`) that `node` goes first for,
 * at least `gapMs` apart: the choice `node` makes itself from the same heartbeats (spread.ts).
 */
export async function firstFor(
  store: Store,
  node: string,
  job: string,
  after: number,
  count: number,
  gapMs: number,
) {
  const spread = new Spread(node);
  spread.self(new Map([[job, true]]), false);
  spread.update(await store.scan('node|', { limit: 100 }), await store.now());
  const out: number[] = [];
  for (let f = Math.ceil(after / 1_000) * 1_000; out.length < count; f += 1_000) {
    const occ = { job, scheduleId: undefined, fireTime: f, shard: undefined };
    if (spread.claimableAt(occ, undefined, 250) === f && f >= (out.at(-1) ?? 0) + gapMs) out.push(f);
  }
  return out;
}

/** Sleeps until this host's clock reads `storeTime` on the store's clock (`offset` = store − host). */
export const sleepUntil = (storeTime: number, offset: number) =>
  sleep(Math.max(0, storeTime - offset - Date.now()));
