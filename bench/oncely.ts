/**
 * Opens oncely's own store for a backend the way an application would, and says how its
 * connections are set up so the floors can use the same pool size. Where a backend takes the
 * application's own pool (`new PostgresStore({ pool })`), the bench passes one of the size it
 * measures with; otherwise it uses `openStore(url)` and reports the default. {@link openDefaults}
 * opens exactly what `openStore(url)` builds, for the row measured the independent benchmark's way.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { openStore } from '../src/index.js';
import { MysqlStore } from '../src/store/mysql.js';
import { PostgresStore } from '../src/store/postgres.js';
import type { Store } from '../src/store/types.js';
import type { BackendName } from './servers.js';

export interface OncelyUnderTest {
  store: Store;
  /** Connections oncely's store uses (and the floors will use); `undefined` for in-process stores. */
  poolSize: number | undefined;
  /** How the store and its pool were set up, for the report. */
  poolNote: string;
  /** Closes the store and any pool the bench created for it. */
  close(): Promise<void>;
}

/**
 * Opens oncely's store on a pool of `poolSize` the bench creates (PostgreSQL, MySQL) or on what
 * `openStore(url)` builds (the rest). Rejects when it cannot connect.
 */
export async function openOncely(
  backend: BackendName,
  url: string,
  prefix: string,
  poolSize: number,
): Promise<OncelyUnderTest> {
  if (backend === 'postgres') {
    const pool = new pg.Pool({ connectionString: url, max: poolSize });
    pool.on('error', () => {});
    return onBenchPool(
      new PostgresStore({ pool, prefix }),
      () => pool.end(),
      poolSize,
      `\`new PostgresStore({ pool })\` on a \`pg.Pool\` with \`max: ${poolSize}\`; openStore's own pool keeps pg's default of 10`,
    );
  }
  if (backend === 'mysql') {
    // As MysqlStore's docs recommend: multipleStatements makes acquire one round trip.
    const pool = mysql.createPool({ uri: url, connectionLimit: poolSize, multipleStatements: true });
    return onBenchPool(
      new MysqlStore({ pool, prefix }),
      () => pool.end(),
      poolSize,
      `\`new MysqlStore({ pool })\` on a mysql2 pool with \`connectionLimit: ${poolSize}, multipleStatements: true\`; ` +
        `openStore's own pool keeps mysql2's default of 10`,
    );
  }
  // memory, sqlite (one in-process connection) and redis (one connection): what openStore builds.
  const store = await openStore(url, { prefix });
  return { store, poolSize: undefined, poolNote: '`openStore(url)`', close: () => store.close() };
}

/** Migrates a store on a pool the bench created; ends the pool if that fails, and on `close()`. */
async function onBenchPool(
  store: Store,
  endPool: () => Promise<void>,
  poolSize: number,
  poolNote: string,
): Promise<OncelyUnderTest> {
  try {
    await store.migrate();
  } catch (err) {
    await endPool().catch(() => {});
    throw err;
  }
  return {
    store,
    poolSize,
    poolNote,
    close: async () => {
      await store.close();
      await endPool();
    },
  };
}

/** What `openStore(url)` builds for each backend, in words, for the report. */
export const OPEN_STORE_DEFAULTS: Record<BackendName, string> = {
  memory: 'an in-process store',
  sqlite: 'one better-sqlite3 connection (WAL, synchronous=NORMAL)',
  postgres: "its own `pg.Pool` with pg's default `max: 10`, named statements",
  mysql: "its own mysql2 pool with mysql2's default `connectionLimit: 10`, multipleStatements",
  redis: 'one ioredis connection with a 10 s commandTimeout',
};

/** `openStore(url, { prefix })`, nothing else: the store an application gets by default. */
export async function openDefaults(url: string, prefix: string): Promise<OncelyUnderTest> {
  const store = await openStore(url, { prefix });
  return { store, poolSize: undefined, poolNote: '`openStore(url)`', close: () => store.close() };
}
