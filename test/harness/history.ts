/**
 * The history checker (src/testing/history-check.ts) for multi-process tests: collects the
 * `run` / `skip` lines fixture nodes print (test/fixtures/run-lines.ts) and asserts no guarantee
 * was broken, naming every violation in the failure.
 */
import { expect } from 'vitest';
import {
  type CheckInput,
  type CheckResult,
  checkHistory,
  formatViolations,
} from '../../src/testing/index.js';

export { runsFromLines } from './history-lines.js';

/** Runs the checker and fails the test with every violation spelt out; returns the counts. */
export function expectHistoryHolds(input: CheckInput): CheckResult {
  const result = checkHistory(input);
  expect(formatViolations(result), 'history checker').toBe('');
  return result;
}
