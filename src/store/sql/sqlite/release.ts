import type { Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { SQLITE_NOW } from './clock.js';

/**
 * release (SQLite): one UPDATE.
 *
 * Takes: holdUntil (store ms; 0 = none), key, token. Returns: changes = 1 when the token held an
 * unexpired lease, which now ends at max(now, holdUntil); the row stays for sweep.
 *
 * Why it is atomic: a single autocommit write statement (write lock first, one clock instant).
 */
export function sqliteRelease(t: Tables): Statement {
  return {
    name: 'release',
    text:
      `UPDATE ${t.leases} SET expires_at = MAX(${SQLITE_NOW}, ?) ` +
      `WHERE "key" = ? AND token = ? AND expires_at > ${SQLITE_NOW}`,
  };
}
