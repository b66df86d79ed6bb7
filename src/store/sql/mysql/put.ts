import type { Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { MYSQL_NOW } from './clock.js';

/**
 * put (MySQL/MariaDB): one INSERT … ON DUPLICATE KEY UPDATE.
 *
 * Takes: key, value, ttlMs (NULL = never expires; now + NULL is NULL). Returns nothing.
 *
 * Why it is atomic in one round trip: a single upsert; concurrent puts on one key serialise on
 * the row and the last one wins. `VALUES()` (deprecated but kept in MySQL 8, the only form MariaDB
 * knows) names the row we tried to insert.
 */
export function mysqlPut(t: Tables): Statement {
  return { name: `${t.prefix}put`, text: mysqlPutRows(t, 1) };
}

/**
 * The same upsert for `n` rows — (key, value, ttlMs) each — in one statement, as apply.ts sends a
 * run of puts (on its script's clock, `now`): the rows are written in their order, each as its own
 * upsert would be (a key repeated in the run updates the row an earlier one wrote, as a second
 * statement would).
 */
export function mysqlPutRows(t: Tables, n: number, now = MYSQL_NOW): string {
  const row = `(?, ?, ${now} + CAST(? AS SIGNED))`;
  return (
    `INSERT INTO ${t.records} (\`key\`, value, expires_at) VALUES ${Array.from({ length: n }, () => row).join(', ')} ` +
    'ON DUPLICATE KEY UPDATE value = VALUES(value), expires_at = VALUES(expires_at)'
  );
}
