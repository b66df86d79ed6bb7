import { type Clock, systemClock } from '../core/clock.js';
import { ACQUIRE_ONE, type TrustedCalls } from '../store/trusted.js';
import type { Lease, Store } from '../store/types.js';
import { LeaseLock } from './lease-lock.js';
import type { Lock, TryLockOptions } from './types.js';
import { lockSpec } from './validate.js';

/**
 * Takes the lock if it is free on the store clock; `null` if someone (anyone) holds it.
 * The one store call is an atomic conditional acquire, never read-then-write. `lockSpec`
 * validates everything the store would, so a shipped store takes the request as it is
 * ({@link ACQUIRE_ONE}); any other store gets it through `acquire`.
 */
export async function tryLock(
  store: Store,
  options: TryLockOptions,
  clock: Clock = systemClock,
): Promise<Lock | null> {
  const spec = lockSpec(options);
  const request = { key: spec.key, owner: spec.owner, leaseMs: spec.atMostMs };
  const sentAt = clock.monotonic();
  const one = (store as Partial<TrustedCalls>)[ACQUIRE_ONE];
  let lease: Lease | null | undefined;
  if (one) lease = await one.call(store, request);
  else [lease] = await store.acquire([request]);
  return lease ? new LeaseLock(store, spec, lease, sentAt, clock) : null;
}
