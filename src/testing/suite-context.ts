import { expect } from 'vitest';
import { OncelyError } from '../core/errors.js';
import type { Store } from '../store/types.js';

/** Opens a new store instance (its own connections) on the backing storage under test. */
export type StoreFactory = () => Promise<Store>;

/** What each part of the conformance suite gets from {@link describeStore}. */
export interface SuiteContext {
  /** The suite's main store, opened before the first test. */
  readonly store: Store;
  /** Opens another store instance (its own connections) on the same storage, closed after the suite. */
  open(): Promise<Store>;
  /** A name no other test (or earlier run on a reused server) uses. */
  unique(label: string): string;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves when `promise` (or the call) rejects with an `OncelyError` of `code`; fails otherwise. */
export async function expectCode(promise: Promise<unknown> | (() => unknown), code: string): Promise<void> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (err) {
    expect(err).toBeInstanceOf(OncelyError);
    expect((err as OncelyError).code).toBe(code);
    return;
  }
  throw new Error(`expected an OncelyError ${code}, but nothing was thrown`);
}

/**
 * The earliest store time at which `local()` (a later `performance.now()` reading) can have
 * happened: the store clock is sampled once, and the store time at local instant t is at least
 * `now + (t - sampleReceived)`. Tests that ask "did this happen before the lease ended?" use it so
 * that the round trip of reading the clock *after* the event (slow on a loaded machine) is not
 * counted against the code under test; lateness of the event itself still is.
 */
export async function storeTimeAt(store: { now(): Promise<number> }): Promise<(local: number) => number> {
  const now = await store.now();
  const received = performance.now();
  return (local) => now + (local - received);
}
