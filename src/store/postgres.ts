/**
 * `oncely/postgres`: the PostgreSQL store, on your `pg.Pool` or its own. Needs `pg`.
 * `openStore('postgres://…')` loads it for you.
 *
 * @module oncely/postgres
 */
import type pg from 'pg';
import { invalidArgument } from '../core/errors.js';
import { urlSecrets } from '../core/redact.js';
import type { BackendOptions } from './backend-options.js';
import { loadDriver } from './driver.js';
import { type PgPoolLike, PostgresDialect } from './sql/postgres/dialect.js';
import { PREPARED_STATEMENTS_PARAM, takeUrlOptions } from './sql/postgres/url-options.js';
import { checkPgUrlParams } from './sql/postgres/url-params.js';
import { shedlockTableName } from './sql/shedlock/table-name.js';
import { SqlStore } from './sql/sql-store.js';
import { tableNames } from './sql/tables.js';
import { booleanOption, checkStoreOptions, onlyWith, stringOption, timeoutOption } from './store-options.js';

export type { PgPoolLike } from './sql/postgres/dialect.js';

/** What `new PostgresStore(options)` accepts: `pool` (yours) or `connectionString` (the store's own pool). */
export interface PostgresStoreOptions {
  /** Your existing `pg.Pool` (or anything with its `query({ name, text, values })`); never ended by oncely. */
  pool?: PgPoolLike;
  /**
   * `postgres://user:pass@host:5432/db`: oncely creates its own pool and ends it on `close()`.
   * May carry `oncely_prepared_statements=true|false` (see `preparedStatements`), which is
   * removed before pg reads the URL.
   */
  connectionString?: string;
  /** Table prefix (default `oncely_`): tables `<prefix>leases`, `<prefix>records`, … */
  prefix?: string;
  /**
   * With `connectionString`: how long to wait for a connection, and for any query's reply (default
   * 10 s; a half-open connection then fails the call instead of hanging it, and is dropped).
   */
  connectTimeoutMs?: number;
  /**
   * Prepare each statement once per connection under a name (default true). Turn off behind a
   * pooler that cannot keep prepared statements (PgBouncer transaction mode before 1.21); where
   * only a URL can be given, with `?oncely_prepared_statements=false` in it.
   */
  preparedStatements?: boolean;
  /**
   * Keep `tryLock`/`withLock` locks in ShedLock's table of this name (`shedlock`, or
   * `schema.shedlock`), so Java services on ShedLock's JDBC provider and this store exclude each
   * other per lock name. Created with ShedLock's DDL if missing. Scheduler leases stay in oncely's
   * tables. See docs/shedlock.md.
   */
  shedlockTable?: string;
}

const KNOWN = [
  'pool',
  'connectionString',
  'prefix',
  'connectTimeoutMs',
  'preparedStatements',
  'shedlockTable',
];

/**
 * The PostgreSQL store (9.5+; tested on 15). Lease times come from the server clock
 * (`clock_timestamp()`), fencing tokens from one sequence, every race-sensitive call is one statement.
 *
 * @example
 * import pg from 'pg';
 * import { PostgresStore } from 'oncely/postgres';
 * const store = new PostgresStore({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) });
 * await store.migrate();
 * const lock = await store.tryLock({ name: 'report', lockAtMostFor: '5m' });
 *
 * // Sharing locks with Java services on ShedLock: the same table, the same lock names.
 * const shared = new PostgresStore({ pool, shedlockTable: 'shedlock' });
 */
export class PostgresStore extends SqlStore {
  constructor(options: PostgresStoreOptions) {
    checkStoreOptions('PostgresStore', options, KNOWN, ['pool', 'connectionString']);
    onlyWith(
      'PostgresStore',
      options,
      'connectTimeoutMs',
      'connectionString',
      'set connectionTimeoutMillis on your own pg.Pool',
    );
    const { pool } = options;
    const given = stringOption(options.connectionString, 'PostgresStore connectionString');
    const fromUrl = given === undefined ? undefined : takeUrlOptions(given);
    const connectionString = fromUrl?.url;
    const tables = tableNames(options.prefix ?? 'oncely_');
    const connectTimeoutMs = timeoutOption(options.connectTimeoutMs, 'connectTimeoutMs', 10_000);
    const option = booleanOption(options.preparedStatements, 'preparedStatements', true);
    const inUrl = fromUrl?.preparedStatements;
    if (inUrl !== undefined && options.preparedStatements !== undefined && inUrl !== option)
      throw invalidArgument(
        `preparedStatements is ${option} but the URL says ${PREPARED_STATEMENTS_PARAM}=${inUrl}; set it in one place`,
      );
    const prepare = inUrl ?? option;
    const shedlock =
      options.shedlockTable === undefined ? undefined : shedlockTableName(options.shedlockTable, 'postgres');
    let usedPool: PgPoolLike;
    if (pool !== undefined) {
      if (pool === null || typeof pool.query !== 'function')
        throw invalidArgument('PostgresStore pool must have a query() method (a pg.Pool)');
      usedPool = pool;
    } else {
      checkPgUrlParams(connectionString!);
      const { Pool } = loadDriver<typeof pg>('pg', 'postgres:');
      const own = new Pool({
        connectionString,
        connectionTimeoutMillis: connectTimeoutMs,
        // A query never waits longer than this for its reply (a half-open connection: the socket
        // stays open, the server never answers): it fails STORE_UNAVAILABLE and the pool drops that
        // connection, so the caller's retry goes out on a fresh one. Without it, a run's finishing
        // batch waited for good on a dead link. Whether the statement ran stays unknown, as for
        // any lost reply. The migration, which may wait its turn behind other processes', has its own.
        query_timeout: connectTimeoutMs,
        keepAlive: true,
      });
      // An idle connection that dies (server restart) must not crash the process; the next query
      // fails with STORE_UNAVAILABLE instead and the pool reconnects.
      own.on('error', () => {});
      usedPool = own;
    }
    const dialect = new PostgresDialect(usedPool, tables, {
      ownsPool: pool === undefined,
      prepare,
      ...(shedlock && { shedlockTable: shedlock }),
    });
    super(dialect, urlSecrets(connectionString));
  }
}

/** `openStore('postgres://…')` / `postgresql://…` entry point. */
export function fromUrl(url: string, options: BackendOptions): PostgresStore {
  return new PostgresStore({
    connectionString: url,
    prefix: options.prefix,
    connectTimeoutMs: options.connectTimeoutMs,
    ...(options.preparedStatements !== undefined && { preparedStatements: options.preparedStatements }),
    ...(options.shedlockTable !== undefined && { shedlockTable: options.shedlockTable }),
  });
}
