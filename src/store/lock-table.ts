import type { Lease } from './types.js';

/**
 * A store's own place for named locks, used by `tryLock`/`withLock` instead of the lease space
 * when the store has one (a SQL store opened with `shedlockTable`: ShedLock's table). Symbol-keyed,
 * so it is not part of the public `Store` contract; a store without it keeps locks as leases under
 * `lock:<name>`.
 */
export const LOCK_TABLE = Symbol('oncely.lockTable');

/** How a lock table recognises one grant: the row's name, holder and grant instant (store ms). */
export interface LockGrant {
  readonly name: string;
  readonly owner: string;
  readonly acquiredAt: number;
  readonly token: number;
}

/**
 * Named locks kept in a table other than the store's leases. Each call is one atomic statement or
 * script on the store clock, like the lease calls it stands in for; errors are `OncelyError`s.
 */
export interface LockTable {
  /** Throws `INVALID_ARGUMENT` for a (validated) lock name the table cannot hold. */
  checkName(name: string): void;
  /** Takes `name` when it is free or its lock has ended; the grant (key = name), or `null` if held. */
  acquire(name: string, owner: string, leaseMs: number): Promise<Lease | null>;
  /** New end (store ms) when `grant` still holds an unexpired lock, else `null`; never revives one. */
  extend(grant: LockGrant, leaseMs: number): Promise<number | null>;
  /**
   * Whether `grant` still held an unexpired lock; it then ends at `holdUntil` (store ms) if that is
   * later than now, else at once.
   */
  release(grant: LockGrant, holdUntil: number): Promise<boolean>;
}

/** A store that may carry a {@link LockTable}. */
export interface HasLockTable {
  readonly [LOCK_TABLE]?: LockTable | undefined;
}
