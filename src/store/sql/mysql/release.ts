import type { Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { MYSQL_NOW } from './clock.js';

/**
 * release (MySQL/MariaDB): one UPDATE. `now` is the clock it reads: the expression itself, or a
 * script's reading of it (clock.ts MYSQL_SCRIPT_NOW, as apply.ts runs it in a batch).
 *
 * Takes: holdUntil (store ms; 0 = none) twice, key, token. Returns (in the OK packet): insertId > 0
 * when the token held an unexpired lease, which now ends at holdUntil if that is later than now,
 * else at once; the row stays for sweep. `LAST_INSERT_ID(expr)` marks a match even when the new
 * value equals the old one, which affectedRows would not without CLIENT_FOUND_ROWS (a caller's
 * pool may have it off); IF evaluates only the branch it takes.
 *
 * Why it is atomic in one round trip: a single statement that locks the row and re-checks token
 * and expiry on its newest version. "At once" is written as the lease's own `acquired_at`, not
 * `now`: two releases of one token may race, the second waiting for the first's row lock and then
 * checking `expires_at > now` with the instant its statement started — possibly before the first
 * one's. Every release of a token is sent after its grant returned, so that instant is never below
 * the grant's `acquired_at`, and the check fails: exactly one release answers true.
 */
export function mysqlRelease(t: Tables, now = MYSQL_NOW): Statement {
  return {
    name: `${t.prefix}release`,
    text:
      `UPDATE ${t.leases} SET expires_at = IF(CAST(? AS SIGNED) > ${now}, LAST_INSERT_ID(CAST(? AS SIGNED)), ` +
      `acquired_at + 0 * LAST_INSERT_ID(${now})) ` +
      `WHERE \`key\` = ? AND token = CAST(? AS SIGNED) AND expires_at > ${now}`,
  };
}

/**
 * release without a hold (holdUntil 0, every `tryLock` without lockAtLeastFor): the same UPDATE with
 * the hold branch left out — key and token only, one clock reading. Returns insertId 1 when the
 * token held an unexpired lease, which now ends at once (its `acquired_at`, as above), else 0.
 */
export function mysqlReleaseNow(t: Tables, now = MYSQL_NOW): Statement {
  return {
    name: `${t.prefix}release_now`,
    text:
      `UPDATE ${t.leases} SET expires_at = acquired_at + 0 * LAST_INSERT_ID(1) ` +
      `WHERE \`key\` = ? AND token = CAST(? AS SIGNED) AND expires_at > ${now}`,
  };
}
