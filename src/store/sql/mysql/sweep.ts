import type { Tables } from '../tables.js';
import { MYSQL_NOW } from './clock.js';
import type { ScriptPart } from './driver.js';

/**
 * sweep (MySQL/MariaDB): three DELETEs, one round trip with multipleStatements, no transaction
 * (each commits on its own; none depends on another); the limits are inlined (runScript).
 *
 * Takes: limit. Returns (affectedRows of each): expired leases deleted, expired records deleted,
 * old fence rows pruned.
 *
 * Why it is safe against concurrent acquire/put: InnoDB DELETE reads each row's newest version
 * under its lock, so a row re-granted or re-put in the meantime no longer matches
 * `expires_at <= now`. Fence rows below the largest are only history (every acquire adds one):
 * the largest stays so AUTO_INCREMENT can never restart below it. The aggregate derived table is
 * materialised, which lets the DELETE read the table it deletes from.
 */
export function mysqlSweepScript(t: Tables, limit: number): ScriptPart[] {
  return [
    {
      sql: `DELETE FROM ${t.leases} WHERE expires_at <= ${MYSQL_NOW} ORDER BY expires_at LIMIT ?`,
      values: [limit],
    },
    {
      sql: `DELETE FROM ${t.records} WHERE expires_at <= ${MYSQL_NOW} ORDER BY expires_at LIMIT ?`,
      values: [limit],
    },
    {
      sql: `DELETE FROM ${t.fence} WHERE id < (SELECT m FROM (SELECT MAX(id) AS m FROM ${t.fence}) AS newest) ORDER BY id LIMIT ?`,
      values: [limit * 10],
    },
  ];
}
