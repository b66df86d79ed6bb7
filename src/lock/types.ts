import type { Duration } from '../core/duration.js';

/**
 * What `store.tryLock(options)` and `tryLock(store, options)` accept (ShedLock's options).
 * Durations are milliseconds or strings (`'30s'`, `'5m'`, `'PT5M'`).
 */
export interface TryLockOptions {
  /** Lock name: 1..255 characters, any characters (stored as data). */
  name: string;
  /**
   * How long the lock is held at most if its holder dies: the lease length. With `withLock`'s
   * keep-alive the lease is renewed while the work runs, so this is not a run-time limit.
   */
  lockAtMostFor: Duration;
  /** Keep the lock at least this long after it was taken, even if released sooner (hides clock differences between nodes for very short tasks). */
  lockAtLeastFor?: Duration;
  /** Who holds it, shown by `oncely locks`; default `host:pid:random`. */
  owner?: string;
}

/**
 * A held lock. Lease times are store times. Not reentrant: while held, `tryLock` with the same name
 * returns `null`, even for the same owner.
 *
 * @example
 * const lock = await store.tryLock({ name: 'nightly', lockAtMostFor: '10m' });
 * if (lock) try { await work(lock.token) } finally { await lock.release() }
 */
export interface Lock extends AsyncDisposable {
  /** The lock's name, as given. */
  readonly name: string;
  /** Who holds it, as given (or the default `host:pid:random`). */
  readonly owner: string;
  /** Fencing token: higher than any earlier holder's token for this name. Pass it to what you write. */
  readonly token: number;
  /** When the lock was taken (store clock). */
  readonly lockedAt: Date;
  /** When the lease ends unless extended (store clock). */
  readonly lockedUntil: Date;
  /** True once released, or once the lease is known to be lost. */
  readonly released: boolean;
  /**
   * Renews the lease to `now + lockAtMostFor` (store clock), **never shorter** than it already
   * runs: `extend('1s')` on a lock held for 10 more minutes keeps the 10 minutes (a late renewal
   * must not cut a hold short). In a ShedLock table (`shedlockTable`) extend keeps ShedLock's own
   * semantics and sets exactly `now + lockAtMostFor`. `lockAtLeastFor`, if given, is counted from
   * `lockedUntil - lockAtMostFor` (now, when the end moved). `false` when the lease already expired
   * or was taken over: it is never revived.
   */
  extend(lockAtMostFor: Duration, lockAtLeastFor?: Duration): Promise<boolean>;
  /** Releases (honouring lockAtLeastFor). `false` if the lease had already been lost or released. */
  release(): Promise<boolean>;
  /**
   * Local monotonic time (`performance.now()` scale) by which the lease has surely ended unless
   * extended: measured from just before the request that granted or extended it.
   */
  readonly localDeadline: number;
}
