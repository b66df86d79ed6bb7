import type { ShedlockTableName } from '../../shedlock/table-name.js';
import type { Tables } from '../../tables.js';
import { FENCE_SLOTS } from '../acquire.js';
import type { MysqlHeader, ScriptPart } from '../driver.js';
import { MYSQL_SHEDLOCK_NOW, MYSQL_SHEDLOCK_NOW_MS, mysqlPlusMs } from './time.js';

/**
 * ShedLock acquire (MySQL/MariaDB): a two-statement script in one transaction (one round trip with
 * multipleStatements; values inlined as sql_mode-proof literals by runScript). ShedLock's
 * `usingDbTime()` sends `INSERT IGNORE` and then an `UPDATE … WHERE lock_until <= UTC_TIMESTAMP(3)`;
 * oncely does both in one `INSERT … ON DUPLICATE KEY UPDATE`, which locks the row the same way.
 *
 * Takes: name, lease ms, owner (→ locked_by). Returns (OK packets): the upsert's insertId is the
 * grant instant in epoch ms when granted, 0 when the name is held; the fence insert's insertId is
 * the fence id F of the grant (token = F × 1024, as the leases' script tokens; see ../acquire.ts).
 *
 * 1. The VALUES row sets LAST_INSERT_ID(now ms). A new name is inserted (granted). An existing row
 *    is taken only if its `lock_until` has passed at the statement's one instant: the first
 *    assignment decides and, when held, resets LAST_INSERT_ID to 0 (IF evaluates only the branch
 *    it takes); the later assignments read the decision back (assignments run left to right and
 *    see earlier new values, which is why `lock_until` — the column the decision reads — goes last).
 *    Either way the row stays X-locked until COMMIT.
 * 2. Only when granted, one AUTO_INCREMENT fence id is drawn, while holding the row lock: every
 *    earlier oncely grant of the name drew its id before it committed, and this one could only
 *    take the row after that, so tokens strictly increase per name across oncely's grants (a
 *    refused acquire draws nothing). ShedLock's grants draw none.
 */
export function mysqlShedlockAcquireScript(
  table: ShedlockTableName,
  t: Tables,
  name: string,
  owner: string,
  leaseMs: number,
): ScriptPart[] {
  const now = MYSQL_SHEDLOCK_NOW;
  return [
    {
      sql:
        `INSERT INTO ${table.sql} (name, lock_until, locked_at, locked_by) VALUES ` +
        `(?, ${mysqlPlusMs(now)}, TIMESTAMPADD(MICROSECOND, 0 * LAST_INSERT_ID(${MYSQL_SHEDLOCK_NOW_MS}), ${now}), ?) ` +
        'ON DUPLICATE KEY UPDATE ' +
        `locked_by = IF(lock_until <= ${now}, VALUES(locked_by), IF(LAST_INSERT_ID(0), NULL, locked_by)), ` +
        'locked_at = IF(LAST_INSERT_ID() > 0, VALUES(locked_at), locked_at), ' +
        'lock_until = IF(LAST_INSERT_ID() > 0, VALUES(lock_until), lock_until)',
      values: [name, leaseMs, owner],
    },
    { sql: `INSERT INTO ${t.fence} (id) SELECT NULL FROM DUAL WHERE LAST_INSERT_ID() > 0`, values: [] },
  ];
}

/** The grant the script's results stand for, or `null` when the name was held. */
export function mysqlShedlockGranted(
  results: readonly unknown[],
  leaseMs: number,
): { token: number; acquiredAt: number; expiresAt: number } | null {
  const acquiredAt = Number((results[0] as MysqlHeader).insertId);
  if (!(acquiredAt > 0)) return null;
  const fence = Number((results[1] as MysqlHeader).insertId);
  return { token: fence * FENCE_SLOTS, acquiredAt, expiresAt: acquiredAt + leaseMs };
}
