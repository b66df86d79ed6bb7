import type { Run, Statement } from '../../dialect.js';
import { toInt } from '../../rows.js';
import type { ShedlockGranted } from '../../shedlock/ops.js';
import type { ShedlockTableName } from '../../shedlock/table-name.js';
import type { Tables } from '../../tables.js';
import { PG_SHEDLOCK_NOW_CTE, pgEpochMs, pgMillis } from './time.js';

/**
 * ShedLock acquire (PostgreSQL): one INSERT … ON CONFLICT (name) DO UPDATE … WHERE … RETURNING —
 * what ShedLock's `usingDbTime()` sends, with oncely's clock reading and a token.
 *
 * Takes: name, owner (→ locked_by), leaseMs. Returns: one row (token, acquired_at, expires_at) when
 * granted — the name had no row, or its `lock_until` had passed at the statement's instant — and
 * no row when someone (Java or Node) holds it.
 *
 * Why it is atomic in one round trip: a single statement. ON CONFLICT locks the existing row and,
 * under READ COMMITTED, evaluates the WHERE against its newest committed version, so of any number
 * of concurrent acquirers — ShedLock's INSERT/UPDATE included, which lock the same row — one wins.
 * The token is `nextval` of oncely's store-wide fence sequence, drawn in RETURNING, i.e. after the
 * row is written and locked: every earlier oncely grant of this name drew its token before it
 * committed, and this statement could only write the row after that, so tokens strictly increase
 * per name across oncely's grants (also after a row is deleted). ShedLock's grants draw none.
 */
export function pgShedlockAcquire(
  table: ShedlockTableName,
  t: Tables,
  name: string,
  run: Run,
): (lockName: string, owner: string, leaseMs: number) => Promise<ShedlockGranted | null> {
  const statement: Statement = {
    name,
    text:
      `${PG_SHEDLOCK_NOW_CTE} INSERT INTO ${table.sql} AS s (name, lock_until, locked_at, locked_by) ` +
      `SELECT $1, c.now + ${pgMillis('$3')}, c.now, $2 FROM c ` +
      'ON CONFLICT (name) DO UPDATE SET lock_until = EXCLUDED.lock_until, ' +
      'locked_at = EXCLUDED.locked_at, locked_by = EXCLUDED.locked_by ' +
      'WHERE s.lock_until <= (SELECT exact FROM c) ' +
      `RETURNING nextval('${t.fence}') AS token, ${pgEpochMs('s.locked_at')} AS acquired_at, ` +
      `${pgEpochMs('s.lock_until')} AS expires_at`,
  };
  return async (lockName, owner, leaseMs) => {
    const [row] = (await run(statement, [lockName, owner, leaseMs])).rows;
    if (!row) return null;
    return {
      token: toInt(row['token']),
      acquiredAt: toInt(row['acquired_at']),
      expiresAt: toInt(row['expires_at']),
    };
  };
}
