import type { LockGrant } from '../../lock-table.js';
import type { ShedlockTableName } from './table-name.js';

/** ShedLock's `name` column is VARCHAR(64): lock names up to 64 characters (code points). */
export const SHEDLOCK_MAX_NAME = 64;

/** A grant written to a ShedLock row: the token oncely drew for it and the row's times (store ms). */
export interface ShedlockGranted {
  token: number;
  acquiredAt: number;
  expiresAt: number;
}

/**
 * What one SQL engine does on a ShedLock table (`sql/<engine>/shedlock/`), each call one statement
 * or one script. Rows keep ShedLock's layout — `name`, `lock_until`, `locked_at`, `locked_by` —
 * with UTC times from the database clock, as ShedLock's `usingDbTime()` writes them. oncely
 * recognises its own grant by `name`, `locked_by` (its owner) and `locked_at` (the grant instant,
 * written in whole milliseconds): ShedLock's table has no token column.
 */
export interface ShedlockOps {
  readonly table: ShedlockTableName;
  /** The longest lease the table's time columns can hold from now on (MySQL TIMESTAMP ends in 2038). */
  readonly maxLeaseMs?: () => number;
  acquire(name: string, owner: string, leaseMs: number): Promise<ShedlockGranted | null>;
  extend(grant: LockGrant, leaseMs: number): Promise<number | null>;
  release(grant: LockGrant, holdUntil: number): Promise<boolean>;
  /** Creates the table with ShedLock's documented DDL if missing, then checks its layout. */
  migrate(): Promise<void>;
}
