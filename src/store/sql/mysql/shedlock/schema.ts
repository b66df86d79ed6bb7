import type { ShedlockTableName } from '../../shedlock/table-name.js';

/**
 * ShedLock's documented MySQL/MariaDB DDL (its README), for `table`. `CREATE TABLE IF NOT EXISTS`
 * is safe from concurrent sessions on MySQL (the metadata lock serialises them).
 */
export function mysqlShedlockDdl(table: ShedlockTableName): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${table.sql} (name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL, ` +
    'locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, ' +
    'PRIMARY KEY (name))'
  );
}

/**
 * The table's columns (name, type, whether the column alone is the primary or a unique key), or
 * no rows when there is no such table. Takes: the schema (NULL = the connection's database) and
 * the table name.
 */
export const MYSQL_SHEDLOCK_COLUMNS =
  'SELECT c.COLUMN_NAME AS name, c.DATA_TYPE AS type, EXISTS (SELECT 1 FROM information_schema.STATISTICS s ' +
  'WHERE s.TABLE_SCHEMA = c.TABLE_SCHEMA AND s.TABLE_NAME = c.TABLE_NAME AND s.COLUMN_NAME = c.COLUMN_NAME ' +
  'AND s.NON_UNIQUE = 0 AND s.SEQ_IN_INDEX = 1 AND NOT EXISTS (SELECT 1 FROM information_schema.STATISTICS o ' +
  'WHERE o.TABLE_SCHEMA = s.TABLE_SCHEMA AND o.TABLE_NAME = s.TABLE_NAME AND o.INDEX_NAME = s.INDEX_NAME ' +
  'AND o.SEQ_IN_INDEX > 1)) AS is_unique ' +
  'FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = COALESCE(?, DATABASE()) AND c.TABLE_NAME = ?';

/** TIMESTAMP, or DATETIME (no zone conversion at all: a UTC wall time stays one). */
export const MYSQL_SHEDLOCK_TIME_TYPES = /^(timestamp|datetime)$/;
