/**
 * A run whose node died, claimed again through a path other than recovery — here the gate's
 * pending record, which named the same fire time — is a recovery all the same: it runs as the
 * dead attempt + 1 with a higher token, and the dead attempt is recorded abandoned
 * (src/scheduler/claim/dead-attempt.ts). Found by the simulator (seed 1443 of 1,500: the checker's
 * attempt-order): the fire time had been queued behind a replay, another node then ran it on
 * time and crashed, and the next node to claim the pending record ran it as attempt 1 again,
 * leaving the dead attempt "running" in the history for good.
 *
 * Node A runs fire time F and is then cut off from the store for good (a crash, as the store sees
 * it: its in-flight record stays, its lease lapses). F is also the gate's pending run. Node B,
 * started after A's lease lapsed, claims the pending record at its first poll — before its
 * recovery pass looks at the in-flight records.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { OncelyError } from '../src/core/errors.js';
import { randomId } from '../src/core/ids.js';
import { openStore } from '../src/index.js';
import { createScheduler } from '../src/scheduler/index.js';
import { keys } from '../src/scheduler/keys.js';
import type { Store } from '../src/store/types.js';
import { testPrefix } from './harness/backends.js';
import { recordEvents } from './harness/events.js';
import { until } from './harness/scheduler-suite.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c().catch(() => {});
});

/** `store` until `cut.off` is set; then every call fails, as for a node that is gone. */
function severable(store: Store, cut: { off: boolean }): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (cut.off) return Promise.reject(new OncelyError('STORE_UNAVAILABLE', 'cut off'));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

describe('a dead run claimed again from its pending record', () => {
  it('runs as attempt 2 with a higher token; the dead attempt is recorded abandoned', async () => {
    const store = await openStore(`memory:${testPrefix('reclaim')}`);
    const job = `reclaim-${randomId(5)}`;
    const cut = { off: false };
    const a = createScheduler({
      store: severable(store, cut),
      node: `a-${randomId(4)}`,
      pollInterval: '200ms',
    });
    let first: { fireTime: number; token: number; attempt: number } | undefined;
    a.define(job, { every: '1s', lockAtMostFor: '1s' }, async (ctx) => {
      if (first !== undefined) return;
      first = { fireTime: ctx.fireTime.getTime(), token: ctx.token, attempt: ctx.attempt };
      cut.off = true;
      // Hangs until its signal aborts (A cannot keep its lease): A never records anything again.
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
    });
    cleanup.push(() => Promise.race([a.stop(), new Promise<void>((r) => setTimeout(r, 2_000))]));
    await a.start();
    await until(() => first !== undefined, 5_000, 'a run on node A');
    const F = first!.fireTime;
    const occ = { job, scheduleId: undefined, fireTime: F, shard: undefined };
    expect(await store.get(keys.inflight(occ))).not.toBeNull();
    // F is also the gate's queued run (as it is when it was queued behind a replay before A ran it).
    const pendingKey = keys.pending(job, undefined, undefined, F);
    await store.put(pendingKey, JSON.stringify({ job, fireTime: F, source: 'schedule' }));
    // A's lease lapses (1 s, not renewed: A is cut off).
    for (const deadline = Date.now() + 5_000; (await store.inspect(keys.occurrence(occ))) !== null; ) {
      if (Date.now() > deadline) throw new Error("timed out waiting for A's lease to lapse");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const b = createScheduler({ store, node: `b-${randomId(4)}`, pollInterval: '200ms' });
    b.define(job, { lockAtMostFor: '1s' }, () => {});
    const events = recordEvents(b);
    cleanup.push(() => b.stop());
    await b.start();
    await until(
      () => events.succeeded.some((e) => e.fireTime.getTime() === F),
      5_000,
      'F to run again on node B',
    );
    await b.stop();
    const started = events.started.filter((e) => e.fireTime.getTime() === F);
    expect(started).toHaveLength(1);
    // The pending record's run (it consumed the record), as the simulator found it; following a
    // dead run, it is labelled that run's recovery.
    expect(started[0]!.source).toBe('recover');
    expect(await store.get(pendingKey)).toBeNull();
    expect(started[0]!.token).toBeGreaterThan(first!.token);
    expect(started[0]!.attempt).toBe(first!.attempt + 1);
    const history = (await b.history({ job, limit: 100 })).filter((h) => h.fireTime.getTime() === F);
    expect(history.map((h) => [h.attempt, h.status]).sort()).toEqual([
      [1, 'abandoned'],
      [2, 'succeeded'],
    ]);
    // The new in-flight record replaced the dead one and is gone with its run: nothing is left
    // for recovery to run a third time.
    expect(await store.get(keys.inflight(occ))).toBeNull();
  }, 30_000);
});
