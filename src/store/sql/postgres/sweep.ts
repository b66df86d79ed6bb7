import type { SweepResult } from '../../types.js';
import type { Run, Statement } from '../dialect.js';
import { toInt } from '../rows.js';
import type { Tables } from '../tables.js';
import { PG_NOW_CTE } from './clock.js';
import { gateBucket, gateSpace } from './gate.js';

/**
 * sweep (PostgreSQL): one statement with two data-modifying CTEs.
 *
 * Takes: limit. Returns: one row { leases, records } with how many expired rows of each went (at
 * most `limit` each).
 *
 * Why it is safe against concurrent acquire/put: each subquery locks at most `limit` expired rows
 * (FOR UPDATE SKIP LOCKED: rows being re-acquired right now are skipped, not waited for) and the
 * DELETE re-checks `expires_at <= now`, so a row re-granted or re-put in between is never
 * deleted. A lease row goes only if its sweep gate bucket is free (exclusive try-lock, see
 * gate.ts): no acquire of that key is in flight, so no token drawn before the row was written can
 * be used after it is gone.
 */
export function pgSweep(t: Tables, run: Run): (limit: number) => Promise<SweepResult> {
  const expired = (table: string, gated: boolean) =>
    `DELETE FROM ${table} WHERE "key" IN (SELECT "key" FROM ${table} WHERE expires_at <= (SELECT now FROM c) ` +
    (gated ? `AND pg_try_advisory_xact_lock(${gateSpace(t)}, ${gateBucket('"key"')}) ` : '') +
    `LIMIT $1 FOR UPDATE SKIP LOCKED) AND expires_at <= (SELECT now FROM c) RETURNING 1`;
  const statement: Statement = {
    name: `${t.prefix}sweep`,
    text:
      `${PG_NOW_CTE}, l AS (${expired(t.leases, true)}), r AS (${expired(t.records, false)}) ` +
      `SELECT (SELECT count(*) FROM l) AS leases, (SELECT count(*) FROM r) AS records`,
  };
  return async (limit) => {
    const [row] = (await run(statement, [limit])).rows;
    return { leases: toInt(row?.['leases'] ?? 0), records: toInt(row?.['records'] ?? 0) };
  };
}
