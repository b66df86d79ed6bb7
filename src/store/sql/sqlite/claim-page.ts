import type { LeaseRequest } from '../../types.js';
import type { NormalizedPageOp } from '../../validate-page.js';
import type { GrantedRow, Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import type { Prepared } from './driver.js';

/**
 * claimPage (SQLite): the acquire upsert of the page's lease, then — only if it granted — one
 * prepared statement per op, all in one `BEGIN IMMEDIATE` transaction.
 *
 * Takes: the lease request; validated ops (every key at most once). Returns: the granted lease row
 * (or `null`: nothing was written) and one result per op.
 *
 * One instant: the grant reads the clock once (acquire.ts) and returns it as `acquired_at`; every
 * op is then judged and written against that bound value, so "live", "expired" and each new
 * expiry (`acquired_at + ttlMs`, NULL when the ttl is) are on the lease's instant.
 *   put     the upsert of put.ts: one row inserted or updated. Result true.
 *   create  an upsert whose DO UPDATE applies only to an expired row (`expires_at <= now`; NULL =
 *           never expires is not): one row inserted, or one expired row overwritten, or nothing
 *           (changes 0, result false) when a live record holds the key.
 *   move    `UPDATE OR REPLACE … SET "key" = to, value, expires_at WHERE "key" = from AND live`:
 *           the record row itself is re-keyed, one row updated; when `to` is already taken (live
 *           or expired) the REPLACE resolution deletes that row first, in the same statement.
 *           Nothing is written when `from` is absent or expired (changes 0, result false); an
 *           expired `from` stays for sweep.
 *
 * Why it is atomic and exactly-once: better-sqlite3 runs the transaction synchronously in this
 * process (one "round trip" to the library), and BEGIN IMMEDIATE takes the database's single
 * write lock before the first read, so racing pages — other connections or processes — run one
 * after another, each seeing every earlier one committed: a `from` moved or a key created by one
 * is no longer there (or live) for the next. Any error rolls back the lease and every op
 * together. One lock for the whole database: no row-lock order, nothing to deadlock.
 */
export function sqliteClaimPage(
  t: Tables,
  prepared: Prepared,
  acquireNow: (request: LeaseRequest) => GrantedRow | null,
): (
  lease: LeaseRequest,
  ops: readonly NormalizedPageOp[],
) => Promise<{ granted: GrantedRow | null; results: boolean[] }> {
  // (key, value, now, ttlMs)
  const put: Statement = {
    name: 'page_put',
    text:
      `INSERT INTO ${t.records} ("key", value, expires_at) VALUES (?, ?, ? + ?) ` +
      'ON CONFLICT ("key") DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at',
  };
  // (key, value, now, ttlMs, now)
  const create: Statement = {
    name: 'page_create',
    text:
      `INSERT INTO ${t.records} ("key", value, expires_at) VALUES (?, ?, ? + ?) ` +
      'ON CONFLICT ("key") DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at ' +
      `WHERE ${t.records}.expires_at <= ?`,
  };
  // (to, value, now, ttlMs, from, now)
  const move: Statement = {
    name: 'page_move',
    text:
      `UPDATE OR REPLACE ${t.records} SET "key" = ?, value = ?, expires_at = ? + ? ` +
      'WHERE "key" = ? AND (expires_at IS NULL OR expires_at > ?)',
  };
  const claim = prepared.db.transaction((lease: LeaseRequest, ops: readonly NormalizedPageOp[]) => {
    const granted = acquireNow(lease);
    if (!granted) return { granted: null, results: ops.map(() => false) };
    const now = granted.acquired_at as number;
    const results = ops.map((op) => {
      const ttl = op.ttlMs ?? null;
      if (op.op === 'move')
        return prepared.get(move).run(op.to, op.value, now, ttl, op.from, now).changes > 0;
      if (op.op === 'create') return prepared.get(create).run(op.key, op.value, now, ttl, now).changes > 0;
      prepared.get(put).run(op.key, op.value, now, ttl);
      return true;
    });
    return { granted, results };
  });
  return async (lease, ops) => claim.immediate(lease, ops);
}
