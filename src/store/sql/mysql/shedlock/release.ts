import type { Statement } from '../../dialect.js';
import type { ShedlockTableName } from '../../shedlock/table-name.js';
import { MYSQL_SHEDLOCK_AT, MYSQL_SHEDLOCK_NOW } from './time.js';

/**
 * ShedLock unlock (MySQL/MariaDB): one UPDATE, ShedLock's unlock narrowed to one grant.
 *
 * Takes: holdUntil (ms; 0 = none) twice, name, owner, acquiredAt (the grant's `locked_at`, ms).
 * Returns (OK packet): insertId 1 when the grant still held an unexpired lock (LAST_INSERT_ID(1)
 * runs only when the SET does: it sits in an expression over a column, never in a constant AND/OR,
 * which MariaDB folds — and so evaluates — before looking at any row), else 0. `lock_until`
 * becomes holdUntil when that is still ahead —
 * lockAtLeastFor, as ShedLock's unlock writes max(now, locked_at + lockAtLeastFor) — else the
 * grant's own `locked_at`: free at once.
 *
 * ShedLock's client-clock unlock matches `name` only and its `usingDbTime()` unlock `name` and
 * `locked_by`; oncely matches the grant and an unexpired `lock_until`, so a holder whose lock ran
 * out never frees the lock somebody took after it.
 *
 * Why it is atomic in one round trip: a single statement that locks the row and re-checks the grant
 * and expiry on its newest version. "At once" is `locked_at`, not now, so that a racing second
 * release of the same grant fails its `lock_until > now` check (see ../release.ts).
 */
export function mysqlShedlockRelease(table: ShedlockTableName): Statement {
  const now = MYSQL_SHEDLOCK_NOW;
  return {
    name: `shedlock_release:${table.sql}`,
    text:
      `UPDATE ${table.sql} SET lock_until = TIMESTAMPADD(MICROSECOND, 0 * LAST_INSERT_ID(1), ` +
      `IF(${MYSQL_SHEDLOCK_AT} > ${now}, ${MYSQL_SHEDLOCK_AT}, locked_at)) ` +
      `WHERE name = ? AND locked_by = ? AND locked_at = ${MYSQL_SHEDLOCK_AT} AND lock_until > ${now}`,
  };
}
