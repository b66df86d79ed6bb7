import type { Tables } from '../tables.js';
import { MYSQL_NOW } from './clock.js';
import type { ScriptPart } from './driver.js';

/**
 * sweep (MySQL/MariaDB): four statements, one round trip with multipleStatements, no transaction
 * (each commits on its own; none depends on another); the limits are inlined (runScript).
 *
 * Takes: limit. Returns (affectedRows of each): lease rows looked at again later, expired leases
 * deleted, expired records deleted, old fence rows pruned.
 *
 * Leases are found through `sweep_at` (schema.ts), which grants and releases leave alone: among the
 * rows due (`sweep_at <= now`), at most `limit` still-live ones get `sweep_at = expires_at`
 * (looked at again when that lease ends), then at most `limit` expired ones are deleted. A row's
 * `sweep_at` is the end of its first lease, or of the lease sweep last saw live in it, so an
 * expired row waits for sweep at most that long; meanwhile it is invisible to every read, and a
 * grant reuses it. Placeholders of the re-grant (regrant.ts) have `sweep_at` 0: due at once.
 *
 * Why it is safe against concurrent acquire/put: InnoDB UPDATE and DELETE read each row's newest
 * version under its lock, so a row re-granted or re-put in the meantime no longer matches
 * `expires_at <= now` (and a re-scored row gets the `expires_at` it has then). Fence rows below the
 * largest are only history (every script acquire adds one): the largest stays so AUTO_INCREMENT can
 * never restart below it. The aggregate derived table is materialised, which lets the DELETE read
 * the table it deletes from.
 */
export function mysqlSweepScript(t: Tables, limit: number): ScriptPart[] {
  return [
    {
      sql: `UPDATE ${t.leases} SET sweep_at = expires_at WHERE sweep_at <= ${MYSQL_NOW} AND expires_at > ${MYSQL_NOW} ORDER BY sweep_at LIMIT ?`,
      values: [limit],
    },
    {
      sql: `DELETE FROM ${t.leases} WHERE sweep_at <= ${MYSQL_NOW} AND expires_at <= ${MYSQL_NOW} ORDER BY sweep_at LIMIT ?`,
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
