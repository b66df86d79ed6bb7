import type { Statement } from '../../dialect.js';
import type { ShedlockTableName } from '../../shedlock/table-name.js';
import { MYSQL_SHEDLOCK_AT, MYSQL_SHEDLOCK_NOW, MYSQL_SHEDLOCK_NOW_MS, mysqlPlusMs } from './time.js';

/**
 * ShedLock extend (MySQL/MariaDB): one UPDATE, ShedLock's extend narrowed to one grant.
 *
 * Takes: leaseMs, leaseMs, name, owner, acquiredAt (the grant's `locked_at`, ms). Returns (OK
 * packet): insertId = the new `lock_until` in epoch ms when the grant still held an unexpired lock,
 * else 0 — `LAST_INSERT_ID(expr)` is reported only when the SET ran, i.e. when the row matched.
 *
 * ShedLock's own extend matches `name` and `locked_by` only; oncely also matches `locked_at`, so a
 * holder whose lock expired and was re-taken under the same owner string cannot extend the new
 * grant.
 *
 * Why it is atomic in one round trip: a single statement; InnoDB locks the row and checks holder,
 * grant instant and expiry on its newest version, at the statement's one instant.
 */
export function mysqlShedlockExtend(table: ShedlockTableName): Statement {
  const now = MYSQL_SHEDLOCK_NOW;
  return {
    name: `shedlock_extend:${table.sql}`,
    text:
      `UPDATE ${table.sql} SET lock_until = IF(LAST_INSERT_ID(${MYSQL_SHEDLOCK_NOW_MS} + CAST(? AS SIGNED)), ` +
      `${mysqlPlusMs(now)}, NULL) ` +
      `WHERE name = ? AND locked_by = ? AND locked_at = ${MYSQL_SHEDLOCK_AT} AND lock_until > ${now}`,
  };
}
