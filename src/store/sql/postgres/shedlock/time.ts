/**
 * Time in a ShedLock table on PostgreSQL: `TIMESTAMP` (without time zone) columns holding UTC wall
 * times, as ShedLock's `usingDbTime()` writes them (`timezone('utc', …)`), so the session's
 * `TimeZone` plays no part. oncely reads the same server clock as for its leases
 * (`clock_timestamp()`, see ../clock.ts) once per statement, in a CTE (a volatile CTE runs once):
 * - `c.exact`, to the microsecond, judges expiry (`lock_until <= c.exact`): a ShedLock host writes
 *   microseconds, and a lock it ended at .123456 is free at .123900, not only from .124;
 * - `c.now`, the same instant truncated to whole milliseconds, is what oncely writes: its store
 *   times are epoch ms, and it recognises its own grant by the exact `locked_at` (so a grant may be
 *   written as starting up to 1 ms before the microsecond `lock_until` it followed).
 */
export const PG_SHEDLOCK_NOW_CTE =
  "WITH c AS (SELECT t AS exact, date_trunc('milliseconds', t) AS now " +
  "FROM (SELECT timezone('utc', clock_timestamp()) AS t) AS clock)";

/** A UTC `timestamp` expression as epoch ms (extract(epoch) of a timestamp reads it as UTC). */
export function pgEpochMs(column: string): string {
  return `(extract(epoch FROM ${column}) * 1000)::bigint`;
}

/** Epoch ms bound at `param` as a UTC `timestamp`; exact (integer microseconds, no float rounding of seconds). */
export function pgTimestampAt(param: string): string {
  return `(TIMESTAMP 'epoch' + ${param}::bigint * INTERVAL '1 millisecond')`;
}

/** An interval of the ms bound at `param`. */
export function pgMillis(param: string): string {
  return `(${param}::bigint * INTERVAL '1 millisecond')`;
}
