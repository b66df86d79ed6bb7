import type { Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { MYSQL_NOW } from './clock.js';

/**
 * release (MySQL/MariaDB): one UPDATE.
 *
 * Takes: holdUntil (store ms; 0 = none), key, token. Returns (in the OK packet): insertId > 0 when
 * the token held an unexpired lease, which now ends at max(now, holdUntil); the row stays for sweep.
 * `LAST_INSERT_ID(expr)` marks a match even when the new value equals the old one, which
 * affectedRows would not without CLIENT_FOUND_ROWS (a caller's pool may have it off).
 *
 * Why it is atomic in one round trip: a single statement that locks the row and re-checks token
 * and expiry on its newest version.
 */
export function mysqlRelease(t: Tables): Statement {
  return {
    name: `${t.prefix}release`,
    text:
      `UPDATE ${t.leases} SET expires_at = LAST_INSERT_ID(GREATEST(${MYSQL_NOW}, CAST(? AS SIGNED))) ` +
      `WHERE \`key\` = ? AND token = CAST(? AS SIGNED) AND expires_at > ${MYSQL_NOW}`,
  };
}
