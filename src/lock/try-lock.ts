import { type Clock, systemClock } from '../core/clock.js';
import { type HasLockTable, LOCK_TABLE } from '../store/lock-table.js';
import { ACQUIRE_ONE, type TrustedCalls } from '../store/trusted.js';
import type { Lease, Store } from '../store/types.js';
import { LeaseLock } from './lease-lock.js';
import type { Lock, TryLockOptions } from './types.js';
import { lockSpec } from './validate.js';

/**
 * Takes the lock if it is free on the store clock; `null` if someone (anyone) holds it.
 * The one store call is an atomic conditional acquire, never read-then-write. `lockSpec`
 * validates everything the store would, so a shipped store takes the request as it is
 * (`ACQUIRE_ONE`); any other store gets it through `acquire`. A store with a lock table
 * (ShedLock's, `LOCK_TABLE`) keeps the lock there, under the bare name.
 */
export async function tryLock(
  store: Store,
  options: TryLockOptions,
  clock: Clock = systemClock,
): Promise<Lock | null> {
  const spec = lockSpec(options);
  const table = (store as HasLockTable)[LOCK_TABLE];
  if (table) {
    table.checkName(spec.name);
    const sentAt = clock.monotonic();
    const lease = await table.acquire(spec.name, spec.owner, spec.atMostMs);
    return lease ? new LeaseLock(store, spec, lease, sentAt, clock, table) : null;
  }
  const request = { key: spec.key, owner: spec.owner, leaseMs: spec.atMostMs };
  const sentAt = clock.monotonic();
  const one = (store as Partial<TrustedCalls>)[ACQUIRE_ONE];
  let lease: Lease | null | undefined;
  if (one) lease = await one.call(store, request);
  else [lease] = await store.acquire([request]);
  return lease ? new LeaseLock(store, spec, lease, sentAt, clock) : null;
}
