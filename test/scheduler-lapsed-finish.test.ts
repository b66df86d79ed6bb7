/**
 * A run whose handler ended but whose finishing batch reached the store only after its lease had
 * lapsed (found by the chaos soak: a link stalled for seconds right after a 50 ms handler). By
 * then another node may have recovered the occurrence — the documented at-least-once case. The
 * late finish must (1) say so: `succeeded` with `leaseLapsed`, and the history entry marked, so
 * that neither an operator nor the history checker reads the recovery as a run after a success;
 * and (2) not delete the in-flight record the recovery put under the same key, which is what lets
 * a third node recover the recovery if its node dies.
 *
 * Forced here with a store wrapper on node A: for A's first occurrence, every keep-alive extend
 * fails and the finishing batch is held until the test lets it through; node B recovers the
 * occurrence after the 1 s lease, and its handler waits while A's late finish lands.
 */
import { afterEach, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';
import { MemoryStore } from '../src/index.js';
import { createScheduler } from '../src/scheduler/index.js';
import { keys } from '../src/scheduler/keys.js';
import type { Store, WriteOp } from '../src/store/types.js';
import { checkHistory, recordsFromHistory } from '../src/testing/index.js';
import { recordEvents } from './harness/events.js';
import { until } from './harness/scheduler-suite.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c().catch(() => {});
});

/** `store` as node A sees it: the first occurrence it claims loses its link once the handler ran. */
function stallingLink(
  store: Store,
  stall: { key?: string | undefined; held?: true; letGo: Promise<void> },
): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      if (prop === 'acquire') {
        return async (...args: Parameters<Store['acquire']>) => {
          const leases = await target.acquire(...args);
          stall.key ??= leases.find((l) => l?.key.startsWith('occ|'))?.key;
          return leases;
        };
      }
      if (prop === 'extend') {
        return async (key: string, token: number, leaseMs: number) => {
          if (key === stall.key) throw new Error('link stalled (test)');
          return target.extend(key, token, leaseMs);
        };
      }
      if (prop === 'apply') {
        return async (ops: WriteOp[]) => {
          if (ops.some((op) => op.op === 'release' && op.key === stall.key && op.holdUntil !== undefined)) {
            stall.held = true;
            await stall.letGo;
          }
          return target.apply(ops);
        };
      }
      return value.bind(target);
    },
  });
}

it('memory: a finish stored after its lease lapsed is marked, and leaves the recovery its in-flight record', async () => {
  const base = new MemoryStore();
  let letGo!: () => void;
  const stall: { key?: string | undefined; held?: true; letGo: Promise<void> } = {
    letGo: new Promise<void>((resolve) => {
      letGo = resolve;
    }),
  };
  const job = `lapsed-${randomId(5)}`;
  const options = { every: '1h', lockAtMostFor: '1s' } as const;
  const a = createScheduler({ store: stallingLink(base, stall), node: 'node-a', pollInterval: '100ms' });
  const b = createScheduler({ store: base, node: 'node-b', pollInterval: '100ms' });
  cleanup.push(
    () => a.stop(),
    () => b.stop(),
  );
  let recoveryMayEnd!: () => void;
  const recoveryEnds = new Promise<void>((resolve) => {
    recoveryMayEnd = resolve;
  });
  a.define(job, options, async () => {});
  b.define(job, options, async (ctx) => {
    if (ctx.attempt > 1) await recoveryEnds;
  });
  const eventsA = recordEvents(a);
  const eventsB = recordEvents(b);
  // A manual trigger, run by A (B is not started yet); its finish stalls.
  await a.start();
  await a.trigger(job);
  await until(() => stall.held === true, 10_000, "A's finishing batch to be held");
  const started = eventsA.started[0]!;
  await b.start();
  await until(() => eventsB.started.length > 0, 10_000, 'B to recover the occurrence');
  const recovery = eventsB.started[0]!;
  expect(recovery.fireTime.getTime()).toBe(started.fireTime.getTime());
  expect(recovery.source).toBe('recover');
  expect(recovery.attempt).toBe(2);
  expect(recovery.token).toBeGreaterThan(started.token);

  letGo();
  await until(() => eventsA.succeeded.length > 0, 10_000, "A's late finish to be stored");
  expect(eventsA.succeeded[0]).toMatchObject({ token: started.token, attempt: 1, leaseLapsed: true });
  // The recovery's in-flight record is still there (before the fix, A's finish deleted it).
  const occ = { job, scheduleId: started.scheduleId, fireTime: started.fireTime.getTime(), shard: undefined };
  const inflight = await base.get(keys.inflight(occ));
  expect(inflight && (JSON.parse(inflight) as { token: number }).token).toBe(recovery.token);

  recoveryMayEnd();
  await until(() => eventsB.succeeded.length > 0, 10_000, 'the recovery to finish');
  expect(eventsB.succeeded[0]!.leaseLapsed).toBeUndefined();
  const history = await b.history({ job, limit: 10 });
  const byAttempt = new Map(history.map((h) => [h.attempt, h]));
  expect(byAttempt.get(1)).toMatchObject({ status: 'succeeded', token: started.token, leaseLapsed: true });
  expect(byAttempt.get(2)).toMatchObject({ status: 'succeeded', token: recovery.token });
  expect(byAttempt.get(2)!.leaseLapsed).toBeUndefined();
  expect(await base.get(keys.inflight(occ))).toBeNull();
  // The checker reads the store's history as legal: one run, then one recovery.
  const result = checkHistory({ records: recordsFromHistory(history), jobs: [{ job, leaseMs: 1_000 }] });
  expect(result.violations).toEqual([]);
  expect(result.recoveries).toBe(1);
}, 30_000);

/**
 * The other way a run outlives its lease: its keep-alive finds the lease gone while the handler
 * still runs (a node frozen past `lockAtMostFor` wakes to this; CI: a SIGSTOPped Redis node,
 * test/faults-sigstop.test.ts). The attempt is recorded `abandoned` and marked `leaseLapsed`, so
 * that nobody reads the handler, which may go on after its signal, as a run ended at that record
 * — the next run of its gate may start beside it. Forced here: every extend of the first
 * occurrence's lease answers "gone".
 */
it('memory: a run whose lease is found gone mid-run is recorded abandoned with leaseLapsed', async () => {
  const base = new MemoryStore();
  let lost: string | undefined;
  const store = new Proxy(base, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop === 'acquire') {
        return async (...args: Parameters<Store['acquire']>) => {
          const leases = await target.acquire(...args);
          lost ??= leases.find((l) => l?.key.startsWith('occ|'))?.key;
          return leases;
        };
      }
      if (prop === 'extend') {
        return async (key: string, token: number, leaseMs: number) =>
          key === lost ? null : target.extend(key, token, leaseMs);
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const job = `lost-${randomId(5)}`;
  const s = createScheduler({ store, node: 'node-a', pollInterval: '100ms' });
  cleanup.push(() => s.stop());
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const signals: AbortSignal[] = [];
  s.define(job, { every: '1h', lockAtMostFor: '1s', overlap: 'skip' }, async (ctx) => {
    signals.push(ctx.signal);
    // The first attempt ignores its signal and goes on past its lease.
    if (signals.length === 1) await held;
  });
  const events = recordEvents(s);
  await s.start();
  await s.trigger(job);
  await until(() => signals[0]?.aborted === true, 10_000, 'the lost lease to abort the run');
  let history = await s.history({ job, limit: 10 });
  for (const deadline = performance.now() + 10_000; history[0]?.status !== 'abandoned'; ) {
    if (performance.now() > deadline) throw new Error('the abandoned attempt never reached the history');
    await new Promise((resolve) => setTimeout(resolve, 20));
    history = await s.history({ job, limit: 10 });
  }
  const [first] = history;
  expect(first).toMatchObject({ status: 'abandoned', attempt: 1, leaseLapsed: true, node: 'node-a' });
  expect(events.succeeded).toEqual([]);
  release();
}, 30_000);
