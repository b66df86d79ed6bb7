import type { ShedlockTableName } from '../../shedlock/table-name.js';

/** ShedLock's documented PostgreSQL DDL (its README), for `table`. */
export function pgShedlockDdl(table: ShedlockTableName): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${table.sql} (name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, ` +
    'locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))'
  );
}

/**
 * Creating the table: one multi-statement simple query, i.e. one implicit transaction, whose
 * advisory lock (held until it ends) serialises concurrent creations — `CREATE TABLE IF NOT
 * EXISTS` alone can still fail when two sessions create the same table at once. The lock key is
 * the quoted name (letters, digits, `_`, `"` and `.` only: a safe literal).
 */
export function pgShedlockMigration(table: ShedlockTableName): string {
  return [
    `SELECT pg_advisory_xact_lock(hashtext('oncely-shedlock'), hashtext('${table.sql}'))`,
    pgShedlockDdl(table),
  ].join(';\n');
}

/**
 * The table's columns (name, type, and whether the column alone is a unique key), or no rows when
 * there is no such table. Takes: the quoted name, resolved like an unquoted name in SQL would be
 * (through the search_path when not schema-qualified), as ShedLock's statements resolve it.
 */
export const PG_SHEDLOCK_COLUMNS =
  'SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, ' +
  'EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisunique ' +
  'AND i.indnatts = 1 AND i.indkey[0] = a.attnum) AS is_unique ' +
  'FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped';

/** `timestamp` or `timestamp(n)`, without time zone. */
export const PG_SHEDLOCK_TIME_TYPES = /^timestamp(\(\d\))? without time zone$/;
