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
  return {
    name: `${t.prefix}put`,
    text:
      `INSERT INTO ${t.records} (\`key\`, value, expires_at) VALUES (?, ?, ${MYSQL_NOW} + CAST(? AS SIGNED)) ` +
      'ON DUPLICATE KEY UPDATE value = VALUES(value), expires_at = VALUES(expires_at)',
  };
}
