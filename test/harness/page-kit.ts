/**
 * What the pages tests (test/scheduler-pages*.test.ts) share: nodes on one store with a cleanup
 * that gives a dead node's stop() 2 s, and the history checker over a job's whole history.
 */
import { expect } from 'vitest';
import { randomId } from '../../src/core/ids.js';
import { createScheduler, type Scheduler } from '../../src/scheduler/index.js';
import type { HistoryEntry } from '../../src/scheduler/types.js';
import type { Store } from '../../src/store/types.js';
import {
  checkHistory,
  formatViolations,
  recordsFromHistory,
  skipsFromHistory,
} from '../../src/testing/index.js';

export const unique = (label: string) => `${label}-${randomId(5)}`;
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const cleanup: (() => Promise<void>)[] = [];

/** Stops every node made since the last call (pass to `afterEach`); a dead node's stop() never ends: each is given 2 s. */
export async function stopNodes(): Promise<void> {
  for (const c of cleanup.splice(0).reverse()) await Promise.race([c().catch(() => {}), sleep(2_000)]);
}

/** A node (poll 200 ms, no logger) stopped by {@link stopNodes}. */
export function pageNode(store: Store, node: string, concurrency = 100): Scheduler {
  const s = createScheduler({ store, node, pollInterval: '200ms', concurrency, logger: false });
  cleanup.push(() => s.stop());
  return s;
}

/** The whole history of `job` (newest first), checked against every guarantee. */
export async function checkedHistory(s: Scheduler, job: string, leaseMs: number): Promise<HistoryEntry[]> {
  const entries = await s.history({ job, limit: 10_000 });
  const result = checkHistory({
    records: recordsFromHistory(entries.filter((e) => e.status !== 'skipped')),
    skips: skipsFromHistory(entries),
    jobs: [{ job, leaseMs }],
  });
  expect(result.violations, formatViolations(result)).toEqual([]);
  return entries;
}

/**
 * The history checker bears out the `removed` skips of `entries` (one job, lease `leaseMs`) by
 * `removals` — the fire times `expected` are each run or skipped — and only by them: without the
 * removals each of the `unjustified` skips is a violation.
 */
export function expectRemovalsJustify(
  entries: readonly HistoryEntry[],
  expected: { job: string; scheduleId: string; fireTime: number }[],
  removals: { job: string; scheduleId: string; at: number }[],
  leaseMs: number,
  unjustified: number,
): void {
  const job = expected[0]!.job;
  const input = {
    records: recordsFromHistory(entries.filter((e) => e.status !== 'skipped')),
    skips: skipsFromHistory(entries),
    jobs: [{ job, leaseMs }],
    expected,
  };
  expect(formatViolations(checkHistory({ ...input, removals }))).toBe('');
  expect(checkHistory(input).violations.map((v) => v.kind)).toEqual(
    Array.from({ length: unjustified }, () => 'unjustified-skip'),
  );
}
