/**
 * A keep-alive extend that reaches the store after the run's finish batch must not cut the
 * occurrence's "done" hold short (found by the simulator: `rerun-after-success`).
 *
 * The race: a run's keep-alive sends `extend(occurrence, token, lockAtMostFor)`; its reply is lost
 * or it travels on another pooled connection, and the store applies it only after the finish
 * batch released the occurrence with `holdUntil` = fire time + ≥ 1 h. The token still matches and
 * the lease is live (held until holdUntil), so a store that set `now + leaseMs` shortened the hour
 * to lockAtMostFor; once that lapsed, a late node could claim and run the fire time again. Here a
 * store wrapper holds the first keep-alive extend of the occurrence until the finish batch has
 * been applied (the handler ends only once that extend is held), which forces the interleaving on
 * every run; the store clock is then moved 30 minutes on.
 */
import { afterEach, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';
import { MemoryStore } from '../src/index.js';
import { createScheduler } from '../src/scheduler/index.js';
import type { Store, WriteOp } from '../src/store/types.js';
import { recordEvents } from './harness/events.js';
import { until } from './harness/scheduler-suite.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c().catch(() => {});
});

/** What the wrapper saw: the occurrence whose extend it held, and the order things reached the store. */
interface Race {
  key?: string;
  token?: number;
  /** What the held extend answered once applied. */
  answer?: number | null;
  order: string[];
}

/**
 * `store`, whose first extend of an occurrence lease (`occ|…`) is held until an apply that
 * releases that lease (the run's finish batch) has been applied; `held` resolves once it is held.
 */
function holdingExtend(store: Store, race: Race, held: () => void): Store {
  let finished!: () => void;
  const finishApplied = new Promise<void>((resolve) => {
    finished = resolve;
  });
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      if (prop === 'extend') {
        return async (key: string, token: number, leaseMs: number) => {
          if (race.key !== undefined || !key.startsWith('occ|')) return target.extend(key, token, leaseMs);
          race.key = key;
          race.token = token;
          held();
          await finishApplied;
          race.answer = await target.extend(key, token, leaseMs);
          race.order.push('extend');
          return race.answer;
        };
      }
      if (prop === 'apply') {
        return async (ops: WriteOp[]) => {
          const result = await target.apply(ops);
          if (ops.some((op) => op.op === 'release' && op.key === race.key && op.holdUntil !== undefined)) {
            race.order.push('finish');
            finished();
          }
          return result;
        };
      }
      return value.bind(target);
    },
  });
}

it('memory: an extend applied after the finish batch keeps the occurrence "done" for the hour', async () => {
  let offset = 0;
  const base = new MemoryStore({ now: () => performance.timeOrigin + performance.now() + offset });
  const race: Race = { order: [] };
  let extendHeld!: () => void;
  const heldSignal = new Promise<void>((resolve) => {
    extendHeld = resolve;
  });
  const store = holdingExtend(base, race, extendHeld);
  const job = `late-extend-${randomId(5)}`;
  const scheduler = createScheduler({ store, node: `a-${randomId(4)}`, pollInterval: '200ms' });
  cleanup.push(() => scheduler.stop());
  let runs = 0;
  // lockAtMostFor 1 s: the keep-alive renews after 0.5 s; the first run ends once that renewal is held.
  scheduler.define(job, { every: '1s', lockAtMostFor: '1s' }, async () => {
    if (runs++ === 0) await heldSignal;
  });
  const events = recordEvents(scheduler);
  await scheduler.start();
  await until(() => race.order.includes('extend'), 10_000, 'the held extend to be applied');
  await scheduler.stop();
  expect(race.order.slice(0, 2)).toEqual(['finish', 'extend']);
  const fireTime = events.succeeded.find((e) => e.token === race.token)!.fireTime.getTime();
  // The late extend still found its token holding the (done) lease, and did not shorten it.
  expect(race.answer).toBeGreaterThanOrEqual(fireTime + 3_600_000);
  const done = await base.inspect(race.key!);
  expect(done?.token).toBe(race.token);
  expect(done!.expiresAt).toBeGreaterThanOrEqual(fireTime + 3_600_000);

  // 30 minutes later on the store clock, a late node still finds the fire time handled.
  offset += 30 * 60_000;
  expect((await base.inspect(race.key!))?.token).toBe(race.token);
  expect((await base.acquire([{ key: race.key!, owner: 'late-node', leaseMs: 3_000 }]))[0]).toBeNull();
}, 20_000);
