import type { LockGrant } from '../../../lock-table.js';
import type { Run, Statement } from '../../dialect.js';
import type { ShedlockTableName } from '../../shedlock/table-name.js';
import { PG_SHEDLOCK_NOW_CTE, pgTimestampAt } from './time.js';

/**
 * ShedLock unlock (PostgreSQL): one UPDATE, ShedLock's unlock narrowed to one grant.
 *
 * Takes: name, owner, acquiredAt (the grant's `locked_at`, ms), holdUntil (ms; 0 = none). Returns:
 * 1 affected row when the grant still held an unexpired lock. Its `lock_until` becomes holdUntil
 * when that is still ahead — lockAtLeastFor, as ShedLock's unlock writes max(now, locked_at +
 * lockAtLeastFor) — else the grant's own `locked_at`: free at once for ShedLock and oncely alike.
 *
 * ShedLock's client-clock unlock matches `name` only and its `usingDbTime()` unlock `name` and
 * `locked_by`; oncely matches the grant (also `locked_at`) and an unexpired `lock_until`, so a
 * holder whose lock ran out never frees the lock somebody took after it.
 *
 * Why it is atomic in one round trip: a single statement that locks the row and re-checks the
 * grant and expiry on its newest version. "At once" is written as `locked_at`, not `now`: a second
 * release of the same grant racing the first re-checks `lock_until > now` with a clock reading that
 * may precede the first's; with `lock_until = locked_at`, never above any reading taken after the
 * grant, it fails, so exactly one release answers true.
 */
export function pgShedlockRelease(
  table: ShedlockTableName,
  name: string,
  run: Run,
): (grant: LockGrant, holdUntil: number) => Promise<boolean> {
  const hold = pgTimestampAt('$4');
  const statement: Statement = {
    name,
    text:
      `${PG_SHEDLOCK_NOW_CTE} UPDATE ${table.sql} AS s ` +
      `SET lock_until = CASE WHEN ${hold} > c.now THEN ${hold} ELSE s.locked_at END FROM c ` +
      `WHERE s.name = $1 AND s.locked_by = $2 AND s.locked_at = ${pgTimestampAt('$3')} AND s.lock_until > c.exact`,
  };
  return async (grant, holdUntil) =>
    (await run(statement, [grant.name, grant.owner, grant.acquiredAt, holdUntil])).affected > 0;
}
