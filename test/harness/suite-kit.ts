/**
 * What the per-feature suites (test/harness/*-suite.ts, wired into every backend's test files)
 * share: defining a test only where it applies, checking a refusal of bad input, and a fleet of
 * scheduler nodes in this process.
 */
import { expect, it } from 'vitest';
import { OncelyError } from '../../src/core/errors.js';
import { randomId } from '../../src/core/ids.js';
import { createScheduler, type Scheduler } from '../../src/scheduler/index.js';
import type { Store } from '../../src/store/types.js';

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

/** Nodes of one test, each on a store of its own from `open` (the same space), polling every 100 ms. */
export interface Fleet {
  stores: Store[];
  nodes: Scheduler[];
  /** Stops the schedulers (their stores stay open, e.g. for history()). */
  halt: () => Promise<void>;
  /** Stops the schedulers and closes their stores. */
  stop: () => Promise<void>;
}

/**
 * `count` nodes named by `name(i)` (default `n0-<random>`, `n1-<random>`, …: the tests of a suite
 * run side by side in one store space, and two live nodes of one name would share a heartbeat);
 * see {@link Fleet}.
 */
export async function openFleet(
  open: () => Promise<Store>,
  count: number,
  name?: (i: number) => string,
): Promise<Fleet> {
  const suffix = randomId(4);
  const named = name ?? ((i: number) => `n${i}-${suffix}`);
  const stores: Store[] = [];
  const nodes: Scheduler[] = [];
  for (let i = 0; i < count; i++) {
    const store = await open();
    stores.push(store);
    nodes.push(createScheduler({ store, node: named(i), pollInterval: '100ms', logger: false }));
  }
  const halt = async () => {
    await Promise.all(nodes.map((n) => n.stop().catch(() => {})));
  };
  const stop = async () => {
    await halt();
    await Promise.all(stores.map((s) => s.close().catch(() => {})));
  };
  return { stores, nodes, halt, stop };
}

/**
 * A test whose body starts scheduler nodes with `node(id)`, each on a store of its own from `open`
 * (polling every 100 ms, a 5 s stop timeout); `make` wraps each (listeners, recorded events). All
 * are stopped and their stores closed after the body, whatever it did.
 */
export function nodesTest<N extends { s: Scheduler; store: Store }>(
  open: () => Promise<Store>,
  make: (s: Scheduler, store: Store) => N,
  title: string,
  body: (node: (id: string) => Promise<N>) => Promise<void>,
  timeoutMs: number,
): void {
  it(
    title,
    async () => {
      const nodes: N[] = [];
      const node = async (id: string): Promise<N> => {
        const store = await open();
        const s = createScheduler({
          store,
          node: id,
          pollInterval: '100ms',
          stopTimeout: '5s',
          logger: false,
        });
        const n = make(s, store);
        nodes.push(n);
        return n;
      };
      try {
        await body(node);
      } finally {
        await Promise.all(nodes.map((n) => n.s.stop().catch(() => {})));
        await Promise.all(nodes.map((n) => n.store.close().catch(() => {})));
      }
    },
    timeoutMs,
  );
}

/** Waits until the store's clock has passed `t`. */
export async function untilStoreTime(store: Store, t: number): Promise<void> {
  while ((await store.now()) < t) await new Promise((r) => setTimeout(r, 50));
}
