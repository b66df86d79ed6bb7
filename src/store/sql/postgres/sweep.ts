import type { SweepResult } from '../../types.js';
import type { Run, Statement } from '../dialect.js';
import { toInt } from '../rows.js';
import type { Tables } from '../tables.js';
import { PG_NOW_CTE } from './clock.js';
import { gateBucket, gateSpace } from './gate.js';

/**
 * sweep (PostgreSQL): one statement with three data-modifying CTEs.
 *
 * Takes: limit. Returns: one row { leases, records } with how many expired rows of each went (at
 * most `limit` each).
 *
 * Leases are found through `sweep_at` (schema.ts), which grants and releases leave alone: among
 * the rows due (`sweep_at <= now`), at most `limit` still-live ones get `sweep_at = expires_at`
 * (looked at again when that lease ends) and at most `limit` expired ones are deleted — disjoint
 * sets on the statement's one instant, so no row is modified twice. A row's `sweep_at` is the end
 * of its first lease, or of the lease sweep last saw live in it, so an expired row waits for sweep
 * at most that long; meanwhile it is invisible to every read, and a grant reuses it.
 *
 * Why it is safe against concurrent acquire/put: each subquery locks at most `limit` rows (FOR
 * UPDATE SKIP LOCKED: rows being re-acquired right now are skipped, not waited for) — run once, as
 * `= ANY(ARRAY(…))`: as `IN (…)` the planner may run it again per row (a semi-join rescan), and
 * with SKIP LOCKED each run can pick other rows, so one sweep(limit 2) once deleted 5 — and the UPDATE
 * and DELETE re-check `expires_at` against now, so a row re-granted or re-put in between is never
 * deleted (and a re-scored row gets the `expires_at` it has then). A lease row goes only if its
 * sweep gate bucket is free (exclusive try-lock, see gate.ts): no acquire of that key is in
 * flight, so no token drawn before the row was written can be used after it is gone.
 *
 * Each subquery asks for index order (`ORDER BY sweep_at` / `expires_at`, oldest first): with only
 * `LIMIT`, a table PostgreSQL has no statistics for yet (new, or grown faster than autovacuum
 * analyses it — a fan-out's first minute) got a plan that reads every row in search of `limit`
 * due ones, usually finding none: a sequential scan of both tables per sweep and node (20,000
 * stored schedules due at once on four nodes, sweeping every second: 1.7 million record rows read
 * by sequential scans, none after). Ordered, the due rows are found through the index — an
 * ordered scan that stops at `limit`, or a bitmap of the due rows — whatever the statistics say.
 */
export function pgSweep(t: Tables, run: Run): (limit: number) => Promise<SweepResult> {
  const now = '(SELECT now FROM c)';
  const due = (live: boolean) =>
    `SELECT "key" FROM ${t.leases} WHERE sweep_at <= ${now} AND expires_at ${live ? '>' : '<='} ${now} ` +
    (live ? '' : `AND pg_try_advisory_xact_lock(${gateSpace(t)}, ${gateBucket('"key"')}) `) +
    'ORDER BY sweep_at LIMIT $1 FOR UPDATE SKIP LOCKED';
  const statement: Statement = {
    name: `${t.prefix}sweep`,
    text:
      `${PG_NOW_CTE}, ` +
      `s AS (UPDATE ${t.leases} SET sweep_at = expires_at WHERE "key" = ANY(ARRAY(${due(true)})) AND expires_at > ${now}), ` +
      `l AS (DELETE FROM ${t.leases} WHERE "key" = ANY(ARRAY(${due(false)})) AND expires_at <= ${now} RETURNING 1), ` +
      `r AS (DELETE FROM ${t.records} WHERE "key" = ANY(ARRAY(SELECT "key" FROM ${t.records} WHERE expires_at <= ${now} ` +
      `ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)) AND expires_at <= ${now} RETURNING 1) ` +
      'SELECT (SELECT count(*) FROM l) AS leases, (SELECT count(*) FROM r) AS records',
  };
  return async (limit) => {
    const [row] = (await run(statement, [limit])).rows;
    return { leases: toInt(row?.['leases'] ?? 0), records: toInt(row?.['records'] ?? 0) };
  };
}
