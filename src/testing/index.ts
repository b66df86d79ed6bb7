/**
 * Test helpers: the conformance suite every store passes, and the deterministic multi-node
 * simulator (`simulate`, `explore`). The suite runs inside vitest (>= 2, an optional peer
 * dependency). This module imports anywhere, also where vitest is not installed or not running;
 * `describeStore` then throws `INVALID_ARGUMENT` saying what it needs. The simulator needs no
 * test runner.
 *
 * @module oncely/testing
 */
import { OncelyError } from '../core/errors.js';
import type { DescribeStoreOptions, StoreFactory } from './conformance.js';

export type { DescribeStoreOptions, StoreFactory } from './conformance.js';
export * from './simulate/index.js';

// vitest refuses to load outside a vitest run (and may be absent): keep the failure for the caller.
const suite: typeof import('./conformance.js') | Error = await import('./conformance.js').catch(
  (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
);

/**
 * The behaviour every oncely store must show, run against a real backend, in a vitest test file.
 * Third-party stores can certify themselves with it.
 *
 * @example
 * import { describeStore } from 'oncely/testing';
 * describeStore('my-store', async () => MyStore.open(process.env.MY_URL!));
 */
export function describeStore(name: string, factory: StoreFactory, options?: DescribeStoreOptions): void {
  if (suite instanceof Error) {
    throw new OncelyError(
      'INVALID_ARGUMENT',
      `describeStore runs in a vitest test file (npm install --save-dev vitest, then run vitest); loading it here failed: ${suite.message.split('\n')[0]}`,
      { cause: suite },
    );
  }
  suite.describeStore(name, factory, options);
}

export {
  type CheckInput,
  type CheckResult,
  checkHistory,
  type DuplicateKind,
  type ExpectedOccurrence,
  type FencedWrite,
  formatViolations,
  type JobFacts,
  occurrenceKey,
  type RunRecord,
  type SkipRecord,
  type Violation,
} from './history-check.js';
export {
  expectedOccurrences,
  recordFromStarted,
  recordsFromHistory,
  skipFromEvent,
  skipsFromHistory,
} from './history-records.js';
