/**
 * `oncely/mysql`: the MySQL 8 / MariaDB 10.6+ store, on your `mysql2/promise` pool or its own.
 * Needs `mysql2`. `openStore('mysql://…')` (or `mariadb://`) loads it for you.
 *
 * @module oncely/mysql
 */
import type mysqlCallbacks from 'mysql2';
import { invalidArgument } from '../core/errors.js';
import { urlSecrets } from '../core/redact.js';
import type { BackendOptions } from './backend-options.js';
import { loadDriver } from './driver.js';
import { BoundedMysqlPool, type RawMysqlPool } from './sql/mysql/bounded-pool.js';
import { MysqlDialect } from './sql/mysql/dialect.js';
import type { MysqlPoolLike } from './sql/mysql/driver.js';
import { MYSQL_MIGRATION_TIMEOUT_MS } from './sql/mysql/schema.js';
import { shedlockTableName } from './sql/shedlock/table-name.js';
import { SqlStore } from './sql/sql-store.js';
import { tableNames } from './sql/tables.js';
import { checkStoreOptions, onlyWith, stringOption, timeoutOption } from './store-options.js';

export type { MysqlConnectionLike, MysqlPoolLike } from './sql/mysql/driver.js';

/** What `new MysqlStore(options)` accepts: `pool` (yours) or `uri` (the store's own pool). */
export interface MysqlStoreOptions {
  /**
   * Your existing `mysql2/promise` pool; never ended by oncely. Create it with
   * `multipleStatements: true` to make `acquire` and `apply` one round trip (without it, the same
   * statements go one by one on one connection, inside a transaction: correct, but a round trip
   * per statement). Its sessions may use any `sql_mode` (NO_BACKSLASH_ESCAPES included): values
   * go as prepared-statement parameters or hex literals, never through client-side escaping.
   */
  pool?: MysqlPoolLike;
  /** `mysql://user:pass@host:3306/db` (or `mariadb://…`): oncely creates and ends its own pool. */
  uri?: string;
  /** Table prefix (default `oncely_`): tables `<prefix>leases`, `<prefix>records`, … */
  prefix?: string;
  /** With `uri`: how long to wait for a connection (default 10 s). */
  connectTimeoutMs?: number;
  /**
   * Keep `tryLock`/`withLock` locks in ShedLock's table of this name (`shedlock`, or
   * `database.shedlock`), so Java services on ShedLock's JDBC provider and this store exclude each
   * other per lock name. Created with ShedLock's DDL if missing. Scheduler leases stay in oncely's
   * tables. See docs/shedlock.md.
   */
  shedlockTable?: string;
}

const KNOWN = ['pool', 'uri', 'prefix', 'connectTimeoutMs', 'shedlockTable'];

/**
 * The MySQL 8 / MariaDB 10.6+ store. Lease times come from the server clock (`UTC_TIMESTAMP(6)`),
 * fencing tokens from an AUTO_INCREMENT table, every race-sensitive call is one statement or one
 * multi-statement script.
 *
 * Note for a caller's pool: extend and release hand their result back through
 * `LAST_INSERT_ID(expr)`, so they change `LAST_INSERT_ID()` of the connection they ran on.
 *
 * @example
 * import mysql from 'mysql2/promise';
 * import { MysqlStore } from 'oncely/mysql';
 * const pool = mysql.createPool({ uri: process.env.DATABASE_URL, multipleStatements: true });
 * const store = new MysqlStore({ pool });
 * await store.migrate();
 *
 * // Sharing locks with Java services on ShedLock: the same table, the same lock names.
 * const shared = new MysqlStore({ pool, shedlockTable: 'shedlock' });
 */
export class MysqlStore extends SqlStore {
  constructor(options: MysqlStoreOptions) {
    checkStoreOptions('MysqlStore', options, KNOWN, ['pool', 'uri']);
    onlyWith('MysqlStore', options, 'connectTimeoutMs', 'uri', 'set connectTimeout on your own mysql2 pool');
    const { pool } = options;
    const uri = stringOption(options.uri, 'MysqlStore uri');
    const tables = tableNames(options.prefix ?? 'oncely_');
    const connectTimeoutMs = timeoutOption(options.connectTimeoutMs, 'connectTimeoutMs', 10_000);
    const shedlock =
      options.shedlockTable === undefined ? undefined : shedlockTableName(options.shedlockTable, 'mysql');
    const shedlockTable = shedlock && { shedlockTable: shedlock };
    let dialect: MysqlDialect;
    if (pool !== undefined) {
      if (pool === null || typeof pool.query !== 'function' || typeof pool.getConnection !== 'function') {
        throw invalidArgument('MysqlStore pool must be a mysql2/promise pool (query() and getConnection())');
      }
      dialect = new MysqlDialect(pool, tables, { ownsPool: false, ...shedlockTable });
    } else {
      const driver = loadDriver<typeof mysqlCallbacks>('mysql2', 'mysql:');
      // mysql2's callback API: BoundedMysqlPool makes the promises (bounded-pool.ts says why).
      let own: mysqlCallbacks.Pool;
      try {
        own = driver.createPool({
          uri: driverUri(uri!),
          multipleStatements: true,
          connectTimeout: connectTimeoutMs,
          enableKeepAlive: true,
        });
      } catch (err) {
        throw invalidArgument(`MysqlStore uri is not a usable mysql:// URL: ${(err as Error).message}`);
      }
      // Every call bounded by connectTimeoutMs (a half-open connection fails the call and is
      // dropped); the migration, which may wait up to a minute for another process's, longer.
      const bounded = new BoundedMysqlPool(own as unknown as RawMysqlPool, connectTimeoutMs);
      dialect = new MysqlDialect(bounded, tables, {
        ownsPool: true,
        multipleStatements: true,
        migrationPool: bounded.withBound(MYSQL_MIGRATION_TIMEOUT_MS),
        ...shedlockTable,
      });
    }
    super(dialect, urlSecrets(uri));
  }
}

/** mysql2 only knows `mysql://`. */
function driverUri(uri: string): string {
  return uri.replace(/^mariadb:/i, 'mysql:');
}

/** `openStore('mysql://…')` / `mariadb://…` entry point. */
export function fromUrl(url: string, options: BackendOptions): MysqlStore {
  return new MysqlStore({
    uri: url,
    prefix: options.prefix,
    connectTimeoutMs: options.connectTimeoutMs,
    ...(options.shedlockTable !== undefined && { shedlockTable: options.shedlockTable }),
  });
}
