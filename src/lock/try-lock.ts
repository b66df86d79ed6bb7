import { type Clock, systemClock } from '../core/clock.js';
import type { Store } from '../store/types.js';
import { LeaseLock } from './lease-lock.js';
import type { Lock, TryLockOptions } from './types.js';
import { lockSpec } from './validate.js';

/**
 * Takes the lock if it is free on the store clock; `null` if someone (anyone) holds it.
 * The one store call is an atomic conditional acquire, never read-then-write.
 */
export async function tryLock(
  store: Store,
  options: TryLockOptions,
  clock: Clock = systemClock,
): Promise<Lock | null> {
  const spec = lockSpec(options);
  const sentAt = clock.monotonic();
  const [lease] = await store.acquire([{ key: spec.key, owner: spec.owner, leaseMs: spec.atMostMs }]);
  return lease ? new LeaseLock(store, spec, lease, sentAt, clock) : null;
}
