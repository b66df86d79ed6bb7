import type { LockGrant } from '../../../lock-table.js';
import type { Run, Statement } from '../../dialect.js';
import { toInt } from '../../rows.js';
import type { ShedlockTableName } from '../../shedlock/table-name.js';
import { PG_SHEDLOCK_NOW_CTE, pgEpochMs, pgMillis, pgTimestampAt } from './time.js';

/**
 * ShedLock extend (PostgreSQL): one UPDATE … RETURNING, ShedLock's extend narrowed to one grant.
 *
 * Takes: name, owner, acquiredAt (the grant's `locked_at`, ms), leaseMs. Returns: the new
 * `lock_until` in ms (= now + leaseMs), or no row when the grant no longer holds an unexpired lock.
 *
 * ShedLock's own extend matches `name` and `locked_by` only; oncely also matches `locked_at`,
 * because an owner string may be shared (a fixed `owner` on every instance): a holder whose lock
 * expired and was re-taken by an instance with the same owner must not extend that new grant.
 *
 * Why it is atomic in one round trip: a single statement; the UPDATE locks the row and re-checks
 * holder, grant instant and expiry on its newest version at the statement's one clock instant, so
 * an expired lock is never revived.
 */
export function pgShedlockExtend(
  table: ShedlockTableName,
  name: string,
  run: Run,
): (grant: LockGrant, leaseMs: number) => Promise<number | null> {
  const statement: Statement = {
    name,
    text:
      `${PG_SHEDLOCK_NOW_CTE} UPDATE ${table.sql} AS s SET lock_until = c.now + ${pgMillis('$4')} FROM c ` +
      `WHERE s.name = $1 AND s.locked_by = $2 AND s.locked_at = ${pgTimestampAt('$3')} ` +
      `AND s.lock_until > c.exact RETURNING ${pgEpochMs('s.lock_until')} AS expires_at`,
  };
  return async (grant, leaseMs) => {
    const [row] = (await run(statement, [grant.name, grant.owner, grant.acquiredAt, leaseMs])).rows;
    return row ? toInt(row['expires_at']) : null;
  };
}
