/**
 * What the per-feature suites (test/harness/*-suite.ts, wired into every backend's test files)
 * share: defining a test only where it applies, and checking a refusal of bad input.
 */
import { expect, it } from 'vitest';
import { OncelyError } from '../../src/core/errors.js';

/** The test where asked (bad input is checked on one backend), and no test at all elsewhere: not one skipped. */
export const definedWhere = (yes: boolean | undefined): typeof it =>
  yes ? it : ((() => {}) as unknown as typeof it);

/** `fn()` throws an OncelyError INVALID_ARGUMENT whose message matches `pattern`. */
export function expectInvalid(fn: () => unknown, pattern: RegExp): void {
  let error: unknown;
  try {
    fn();
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(OncelyError);
  expect((error as OncelyError).code).toBe('INVALID_ARGUMENT');
  expect((error as OncelyError).message).toMatch(pattern);
}
