import type { Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { SQLITE_NOW } from './clock.js';

/**
 * extend (SQLite): one UPDATE … RETURNING.
 *
 * Takes: leaseMs, key, token. Returns: the new expires_at = max(expires_at, now + leaseMs) — an
 * extend never shortens a lease, so a late one cannot cut a release's hold short (see
 * Store.extend) — or no row when the token does not hold an unexpired lease.
 *
 * Why it is atomic: a single autocommit write statement takes the write lock before it reads, and
 * `julianday('now')` is one instant for the whole statement.
 */
export function sqliteExtend(t: Tables): Statement {
  return {
    name: 'extend',
    text:
      `UPDATE ${t.leases} SET expires_at = MAX(expires_at, ${SQLITE_NOW} + ?) ` +
      `WHERE "key" = ? AND token = ? AND expires_at > ${SQLITE_NOW} RETURNING expires_at`,
  };
}
