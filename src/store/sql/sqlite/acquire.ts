import { OncelyError } from '../../../core/errors.js';
import type { LeaseRequest } from '../../types.js';
import type { GrantedRow, Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { SQLITE_NOW } from './clock.js';
import type { Prepared } from './driver.js';

/**
 * acquire (SQLite): one upsert per key; a single key (every `tryLock`) is one autocommit statement,
 * a batch is those upserts in one `BEGIN IMMEDIATE` transaction.
 *
 * Takes: key, owner, lease length (a batch sorted by key). Returns: one row (key, token,
 * acquired_at, expires_at) per granted key.
 *
 * Why it is atomic: the upsert is a write statement, so SQLite takes the database's single write
 * lock before it reads anything (the statement's first opcode is a write `Transaction`); with no
 * read transaction open before it, a stale WAL snapshot surfaces as plain SQLITE_BUSY, which
 * busy_timeout retries, never as SQLITE_BUSY_SNAPSHOT. Under that lock it reads the clock once
 * (`julianday('now')` is one instant per statement) and the one-row fence counter, grants the key
 * only if it is absent or expired on that instant, and, if it granted, the AFTER INSERT / AFTER
 * UPDATE OF token triggers (schema.ts) raise the counter to the new token inside the same
 * statement: grant and counter commit together or not at all, and nothing is drawn when the key is
 * held. A batch holds the write lock from BEGIN IMMEDIATE to COMMIT, and each upsert reads the
 * counter its predecessor's trigger raised. The counter only grows, so tokens grow per key even
 * after sweep deleted the row; `token < excluded.token` keeps that true even if the counter row
 * were ever restored from an older backup (a stale key then stays unavailable rather than going
 * backwards). A new row's `sweep_at` is its lease's end; a granted existing row keeps its own
 * (only sweep moves it), so a lock cycle writes no index page but the primary key's.
 *
 * The statement only runs on a schema this oncely migrated: it names `sweep_at`, which the same
 * migration transaction adds together with the two triggers, so on an older database it fails
 * with "no column named sweep_at" (a SCHEMA error, never a grant). Without the triggers the
 * counter would stand still and a swept key could get its old token again. The token is NULL, and
 * the insert fails its NOT NULL constraint (before any conflict handling), when the counter row
 * is missing: a SCHEMA error too.
 */
export function sqliteAcquire(
  t: Tables,
  prepared: Prepared,
): {
  acquire: (requests: readonly LeaseRequest[]) => Promise<GrantedRow[]>;
  /** One key, answered synchronously (the autocommit upsert). */
  acquireNow: (request: LeaseRequest) => GrantedRow | null;
} {
  const upsert: Statement = {
    name: 'acquire_upsert',
    text:
      `INSERT INTO ${t.leases} ("key", owner, token, acquired_at, expires_at, sweep_at) ` +
      `VALUES (?, ?, (SELECT value + 1 FROM ${t.fence} WHERE id = 1), ${SQLITE_NOW}, ${SQLITE_NOW} + ?, ${SQLITE_NOW} + ?) ` +
      `ON CONFLICT ("key") DO UPDATE SET owner = excluded.owner, token = excluded.token, ` +
      `acquired_at = excluded.acquired_at, expires_at = excluded.expires_at ` +
      `WHERE ${t.leases}.expires_at <= excluded.acquired_at AND ${t.leases}.token < excluded.token ` +
      `RETURNING "key" AS "key", token, acquired_at, expires_at`,
  };
  const one = (r: LeaseRequest): GrantedRow | null => {
    try {
      return (
        (prepared.get(upsert).get(r.key, r.owner, r.leaseMs, r.leaseMs) as GrantedRow | undefined) ?? null
      );
    } catch (err) {
      if (err instanceof Error && /NOT NULL constraint failed: \w+\.token/.test(err.message)) {
        throw new OncelyError(
          'SCHEMA',
          `sqlite store: the fence counter row of ${t.fence} is missing; run migrate()`,
          { cause: err },
        );
      }
      throw err;
    }
  };
  const batch = prepared.db.transaction((requests: readonly LeaseRequest[]): GrantedRow[] => {
    const granted: GrantedRow[] = [];
    for (const r of requests) {
      const row = one(r);
      if (row) granted.push(row);
    }
    return granted;
  });
  return {
    acquire: async (requests) => {
      if (requests.length !== 1) return batch.immediate(requests);
      const row = one(requests[0]!);
      return row ? [row] : [];
    },
    acquireNow: one,
  };
}
