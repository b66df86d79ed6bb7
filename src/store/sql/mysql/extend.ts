import type { Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { MYSQL_NOW } from './clock.js';

/**
 * extend (MySQL/MariaDB): one UPDATE.
 *
 * Takes: leaseMs, key, token. Returns (in the OK packet): insertId = the new expires_at =
 * GREATEST(expires_at, now + leaseMs) when the token held an unexpired lease, else 0. An extend
 * never shortens a lease, so a late one cannot cut a release's hold short (see Store.extend); when
 * the row keeps its value (no change, affectedRows 0) the SET still ran, so insertId is still set. MySQL has no UPDATE … RETURNING; `LAST_INSERT_ID(expr)`
 * is its documented way to hand a value computed by an UPDATE back to the client, and the server
 * reports it only when the SET ran, i.e. when the row matched (regardless of CLIENT_FOUND_ROWS).
 *
 * Why it is atomic in one round trip: a single statement; InnoDB locks the row and checks token and
 * expiry on its newest version, with one clock instant for the whole statement.
 */
export function mysqlExtend(t: Tables): Statement {
  return {
    name: `${t.prefix}extend`,
    text:
      `UPDATE ${t.leases} SET expires_at = LAST_INSERT_ID(GREATEST(expires_at, ${MYSQL_NOW} + CAST(? AS SIGNED))) ` +
      `WHERE \`key\` = ? AND token = CAST(? AS SIGNED) AND expires_at > ${MYSQL_NOW}`,
  };
}
