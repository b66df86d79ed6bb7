/**
 * Time in a ShedLock table on MySQL/MariaDB: `TIMESTAMP(3)` columns holding UTC wall times written
 * and compared through `UTC_TIMESTAMP(3)`, exactly as ShedLock's `usingDbTime()` does. A TIMESTAMP
 * column converts through the session `time_zone` on the way in and back out, so a value reads
 * back as written and comparisons agree for every session in the same zone (UTC sessions: always;
 * another zone: except inside its DST gap). `UTC_TIMESTAMP(3)` is the statement's one instant (like
 * every temporal function but SYSDATE()) and is oncely's store clock truncated to milliseconds
 * (../clock.ts reads the same instant at microseconds).
 */
export const MYSQL_SHEDLOCK_NOW = 'UTC_TIMESTAMP(3)';

const EPOCH = "TIMESTAMP '1970-01-01 00:00:00'";

/** The statement's instant as epoch ms. */
export const MYSQL_SHEDLOCK_NOW_MS = mysqlEpochMs(MYSQL_SHEDLOCK_NOW);

/** A UTC datetime expression as epoch ms. */
export function mysqlEpochMs(expression: string): string {
  return `(TIMESTAMPDIFF(MICROSECOND, ${EPOCH}, ${expression}) DIV 1000)`;
}

/** The epoch ms of one `?` placeholder as a UTC datetime. */
export const MYSQL_SHEDLOCK_AT = `TIMESTAMPADD(MICROSECOND, CAST(? AS SIGNED) * 1000, ${EPOCH})`;

/** `base` plus the ms of one `?` placeholder. */
export function mysqlPlusMs(base: string): string {
  return `TIMESTAMPADD(MICROSECOND, CAST(? AS SIGNED) * 1000, ${base})`;
}

/** The last instant a TIMESTAMP column holds (2038-01-19 03:14:07.999 UTC), in epoch ms. */
export const MYSQL_TIMESTAMP_END_MS = 2_147_483_647_999;
