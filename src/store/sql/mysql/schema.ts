import { SCHEMA_VERSION, type Tables } from '../tables.js';

/**
 * The migration, run statement by statement on one connection holding `GET_LOCK` (DDL commits
 * implicitly in MySQL, so a transaction would not help; the named lock serialises concurrent
 * migrations, and dies with the connection if the process does).
 *
 * Keys are VARBINARY: byte order of UTF-8 = code point order, and no PAD SPACE — with
 * `utf8mb4_bin` (a PAD SPACE collation on MariaDB and MySQL 5.7) 'a' and 'a ' are the same
 * primary key. 2048 bytes hold any 512-UTF-16-unit key (at most 1536 bytes of UTF-8) and stay under
 * InnoDB's 3072-byte index limit. Values are LONGTEXT utf8mb4 (records may be large).
 *
 * Sweep finds lease rows through `sweep_at` (sweep.ts), not `expires_at`: every grant and release
 * rewrites `expires_at`, and a secondary index on it would cost each of them an index delete and
 * insert, while `sweep_at` is written when a row is inserted and afterwards only by sweep. A
 * database made by an older oncely gets the column (rows default to 0: due at once) and loses the
 * old index through {@link mysqlUpgrades}.
 */
export const MYSQL_MIGRATION_LOCK_SECONDS = 60;

/**
 * How long one statement of the migration may wait for its answer on openStore's own pool
 * (BoundedMysqlPool): the GET_LOCK wait for another process's migration, plus a minute for a
 * schema change on a busy server.
 */
export const MYSQL_MIGRATION_TIMEOUT_MS = (MYSQL_MIGRATION_LOCK_SECONDS + 60) * 1000;

export function mysqlLockName(t: Tables): string {
  return `oncely:${t.prefix}`;
}

export function mysqlMetaTable(t: Tables): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${t.meta} (` +
    'name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY, ' +
    'value VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL) ENGINE = InnoDB'
  );
}

export function mysqlReadVersion(t: Tables): string {
  return `SELECT value FROM ${t.meta} WHERE name = 'schema_version'`;
}

export function mysqlCreateTables(t: Tables): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${t.leases} (` +
      '`key` VARBINARY(2048) NOT NULL PRIMARY KEY, ' +
      'owner VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, ' +
      'token BIGINT NOT NULL, acquired_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, ' +
      `sweep_at BIGINT NOT NULL DEFAULT 0, INDEX ${t.leases}_sweep_at (sweep_at)) ENGINE = InnoDB`,
    `CREATE TABLE IF NOT EXISTS ${t.records} (` +
      '`key` VARBINARY(2048) NOT NULL PRIMARY KEY, ' +
      'value LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, expires_at BIGINT NULL, ' +
      `INDEX ${t.records}_expires_at (expires_at)) ENGINE = InnoDB`,
    `CREATE TABLE IF NOT EXISTS ${t.fence} (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY) ENGINE = InnoDB`,
    `INSERT IGNORE INTO ${t.meta} (name, value) VALUES ('schema_version', '${SCHEMA_VERSION}')`,
  ];
}

/**
 * In-place upgrades of a schema made by an older oncely, each run when its probe (a `SHOW`)
 * finds what it expects: `missing` — no row — or present. Idempotent; serialised by the
 * migration lock like the rest.
 */
export function mysqlUpgrades(t: Tables): { probe: string; when: 'missing' | 'present'; sql: string }[] {
  return [
    {
      probe: `SHOW COLUMNS FROM ${t.leases} WHERE Field = 'sweep_at'`,
      when: 'missing',
      sql:
        `ALTER TABLE ${t.leases} ADD COLUMN sweep_at BIGINT NOT NULL DEFAULT 0, ` +
        `ADD INDEX ${t.leases}_sweep_at (sweep_at)`,
    },
    {
      probe: `SHOW INDEX FROM ${t.leases} WHERE Key_name = '${t.leases}_expires_at'`,
      when: 'present',
      sql: `ALTER TABLE ${t.leases} DROP INDEX ${t.leases}_expires_at`,
    },
  ];
}
