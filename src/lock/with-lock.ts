import type { Clock } from '../core/clock.js';
import { invalidArgument } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { describe } from '../core/options.js';
import type { Store } from '../store/types.js';
import { KeepAlive } from './keep-alive.js';
import type { LeaseLock } from './lease-lock.js';
import { tryLock } from './try-lock.js';
import type { Lock, TryLockOptions } from './types.js';

/** What `withLock(store, options, fn)` accepts: {@link TryLockOptions} plus `keepAlive`. */
export interface WithLockOptions extends TryLockOptions {
  /**
   * Renew the lease every lockAtMostFor / 2 while `fn` runs (default `true`). Either way `signal`
   * aborts with `LOCK_LOST` before the lease could end without renewal.
   */
  keepAlive?: boolean;
}

/** What `withLock` returns: whether `fn` ran (the lock was free), and if so what it returned. */
export type WithLockResult<T> =
  | {
      /** `fn` ran: the lock was free. */
      ran: true;
      /** What `fn` returned (awaited). */
      value: T;
    }
  | {
      /** `fn` did not run: another holder had the lock. */
      ran: false;
    };

export interface WithLockInternals {
  clock?: Clock;
  logger?: Logger;
}

/**
 * Runs `fn` only if the lock is free, holding it (and renewing it) while `fn` runs, and releasing it
 * afterwards — also when `fn` throws, in which case the error is rethrown.
 *
 * @example
 * const r = await withLock(store, { name: 'billing', lockAtMostFor: '30s' }, async (lock, signal) => {
 *   return chargeCustomers({ fencingToken: lock.token, signal });
 * });
 * if (!r.ran) console.log('another instance is billing');
 *
 * @param internals For oncely's own tests (an injected clock and logger); leave it out.
 */
export async function withLock<T>(
  store: Store,
  options: WithLockOptions,
  fn: (lock: Lock, signal: AbortSignal) => Promise<T> | T,
  internals: WithLockInternals = {},
): Promise<WithLockResult<T>> {
  // Checked before the lock is taken: a bad call must not hold (and release) anyone's lock.
  if (typeof fn !== 'function') throw invalidArgument('withLock: the third argument must be a function');
  const { keepAlive = true, ...lockOptions } = options ?? {};
  if (typeof keepAlive !== 'boolean')
    throw invalidArgument(`withLock: keepAlive must be true or false; got ${describe(keepAlive)}`);
  const lock = await tryLock(store, lockOptions, internals.clock);
  if (!lock) return { ran: false };
  const lease = lock as LeaseLock;
  const keeper = new KeepAlive(lease, {
    leaseMs: lease.lockedUntil.getTime() - lease.lockedAt.getTime(),
    renew: keepAlive,
    ...(internals.clock ? { clock: internals.clock } : {}),
    ...(internals.logger ? { logger: internals.logger } : {}),
  });
  try {
    const value = await fn(lock, keeper.signal);
    return { ran: true, value };
  } finally {
    await keeper.stop();
    // A failed release is logged, not thrown: the lease ends by itself at lockedUntil, and the
    // callback's result (or its own error) is what the caller needs to see.
    await lock.release().catch((err: unknown) => {
      internals.logger?.warn(`lock ${JSON.stringify(lock.name)}: release failed`, err);
    });
  }
}
