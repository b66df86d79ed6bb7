import { OncelyError } from '../core/errors.js';
import { describe } from '../core/options.js';
import { redactSecret, redactUrl, urlSecrets } from '../core/redact.js';
import type { FromUrl } from './backend-options.js';
import { backendOnlyOptions, checkOpenOptions } from './open-options.js';
import { type HasSchemaState, SCHEMA_STATE, type SchemaState } from './schema-state.js';
import type { Store } from './types.js';
import { validatePrefix } from './validate.js';

/**
 * What `openStore(url, options)` accepts. An option the URL's scheme does not use is refused
 * (`INVALID_ARGUMENT`), never ignored.
 */
export interface OpenStoreOptions {
  /** Prefix of every table/key the store creates (default `oncely_`). */
  prefix?: string;
  /** How long to wait for the server before `STORE_UNAVAILABLE` (default 10 s). */
  connectTimeoutMs?: number;
  /** `sqlite:` only: how long a write waits for another process's write lock (default 10 s). */
  busyTimeoutMs?: number | undefined;
  /**
   * `postgres://` only: prepare each statement once per connection (default true); false behind a
   * pooler that cannot keep prepared statements (PgBouncer transaction mode before 1.21).
   */
  preparedStatements?: boolean | undefined;
  /**
   * `postgres://` and `mysql://`/`mariadb://` only: keep `tryLock`/`withLock` locks in ShedLock's
   * table of this name (`'shedlock'`, or `'schema.shedlock'`), created with ShedLock's DDL if
   * missing, so Java services on ShedLock and this store exclude each other per lock name. Lock
   * names are then at most 64 characters. See docs/shedlock.md.
   */
  shedlockTable?: string | undefined;
}

export type { BackendOptions, FromUrl } from './backend-options.js';

const BACKENDS: Record<string, { module: string; load: () => Promise<{ fromUrl: FromUrl }> }> = {
  memory: { module: 'none', load: () => import('./memory-url.js') },
  sqlite: { module: 'better-sqlite3', load: () => import('./sqlite.js') },
  postgres: { module: 'pg', load: () => import('./postgres.js') },
  postgresql: { module: 'pg', load: () => import('./postgres.js') },
  mysql: { module: 'mysql2', load: () => import('./mysql.js') },
  mariadb: { module: 'mysql2', load: () => import('./mysql.js') },
  redis: { module: 'ioredis', load: () => import('./redis.js') },
  rediss: { module: 'ioredis', load: () => import('./redis.js') },
  etcd: { module: 'etcd3', load: () => import('./etcd.js') },
  etcds: { module: 'etcd3', load: () => import('./etcd.js') },
};

/**
 * Opens a store from a URL, creates its schema if missing, and returns it ready to use.
 *
 * - `memory:` (private) or `memory:NAME` (shared by every store of that name in the process)
 * - `sqlite:./file.db`, `sqlite:/abs/file.db`
 * - `postgres://user:pass@host:5432/db`
 * - `mysql://user:pass@host:3306/db` (MySQL 8, MariaDB 10.6+; `mariadb://` too)
 * - `redis://[:pass@]host:6379[/db]`, `rediss://…` for TLS
 * - `etcd://[user:pass@]host:2379[,host:2379…]`, `etcds://…` for TLS
 *
 * Unknown scheme, bad prefix, or an option this scheme would not use (a misspelt name, another
 * backend's option): `INVALID_ARGUMENT`. Server unreachable within `connectTimeoutMs`:
 * `STORE_UNAVAILABLE`, with the URL's password redacted.
 *
 * @example
 * const store = await openStore(process.env.ONCELY_STORE ?? 'sqlite:./oncely.db');
 * // Locks shared with Java services on ShedLock (same database, same table):
 * const shared = await openStore(process.env.DATABASE_URL!, { shedlockTable: 'shedlock' });
 */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  return (await connectStore(url, options, (store) => store.migrate())).store;
}

/**
 * `openStore` for tools that must create nothing (the CLI's read-only commands): instead of
 * migrating, the store looks for its schema ({@link SCHEMA_STATE}), within the same time limit and
 * with the same errors. A store that cannot look (memory, SQLite, a third-party one) is migrated
 * as `openStore` does, and `schema` is undefined. Not part of the public API.
 */
export async function openExistingStore(
  url: string,
  options: OpenStoreOptions = {},
): Promise<{ store: Store; schema: SchemaState | undefined }> {
  const { store, ready } = await connectStore(url, options, async (store) => {
    const look = (store as HasSchemaState)[SCHEMA_STATE];
    if (look) return look();
    await store.migrate();
    return undefined;
  });
  return { store, schema: ready };
}

/**
 * Checks `url` and `options`, creates the backend's store and runs `ready` on it (the migration,
 * or a look at the schema) bounded by `connectTimeoutMs`; closes the store if that fails.
 */
async function connectStore<T>(
  url: string,
  options: OpenStoreOptions,
  ready: (store: Store) => Promise<T>,
): Promise<{ store: Store; ready: T }> {
  if (typeof url !== 'string' || url.trim() === '') {
    throw new OncelyError(
      'INVALID_ARGUMENT',
      'store URL must be a non-empty string such as sqlite:./oncely.db',
    );
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  const backend = scheme === undefined ? undefined : BACKENDS[scheme];
  const shown = redactUrl(url);
  if (!backend) {
    throw new OncelyError(
      'INVALID_ARGUMENT',
      `unknown store URL ${JSON.stringify(shown)}: use memory:, sqlite:PATH, postgres://…, mysql://…, mariadb://…, redis://…, rediss://…, etcd://… or etcds://…`,
    );
  }
  checkOpenOptions(options, scheme!);
  const prefix = validatePrefix(options.prefix ?? 'oncely_');
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  if (typeof connectTimeoutMs !== 'number' || !Number.isInteger(connectTimeoutMs) || connectTimeoutMs <= 0) {
    throw new OncelyError(
      'INVALID_ARGUMENT',
      `connectTimeoutMs must be a positive whole number; got ${describe(connectTimeoutMs)}`,
    );
  }
  checkServerUrl(url, scheme!, shown);
  let mod: { fromUrl: FromUrl };
  try {
    mod = await backend.load();
  } catch (err) {
    throw new OncelyError(
      'INVALID_ARGUMENT',
      `the ${scheme}: store needs the '${backend.module}' package; install it with: npm install ${backend.module}`,
      { cause: err },
    );
  }
  let store: Store;
  try {
    store = await mod.fromUrl(url, { prefix, connectTimeoutMs, ...backendOnlyOptions(options) });
  } catch (err) {
    if (err instanceof OncelyError) throw err;
    // A driver refusing the URL itself (it does not connect here): the URL is what to fix.
    const detail = redactSecret(err instanceof Error ? err.message : String(err), urlSecrets(url));
    throw new OncelyError('INVALID_ARGUMENT', `store URL ${JSON.stringify(shown)}: ${detail}`, {
      cause: err,
    });
  }
  let timer: NodeJS.Timeout | undefined;
  let result: T;
  try {
    result = await Promise.race([
      ready(store),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new OncelyError(
                'STORE_UNAVAILABLE',
                `store ${shown} did not answer within ${connectTimeoutMs} ms`,
              ),
            ),
          connectTimeoutMs,
        );
      }),
    ]);
  } catch (err) {
    await store.close().catch(() => {});
    if (err instanceof OncelyError && err.code !== 'STORE_UNAVAILABLE') throw err;
    const password = urlSecrets(url);
    const detail = redactSecret(err instanceof Error ? err.message : String(err), password);
    const message = detail.includes(shown) ? detail : `cannot open store ${shown}: ${detail}`;
    throw new OncelyError('STORE_UNAVAILABLE', redactSecret(message, password), { cause: err });
  } finally {
    clearTimeout(timer);
  }
  return { store, ready: result };
}

const SERVER_SCHEMES = new Set(['postgres', 'postgresql', 'mysql', 'mariadb', 'redis', 'rediss']);

/**
 * A server URL that is not even a URL (bad port, unclosed IPv6 bracket, no `//`) is bad input,
 * not an unreachable server: the drivers would only notice when connecting. An empty host stays
 * allowed (PostgreSQL's `postgres:///db?host=/run/postgresql` socket form).
 */
function checkServerUrl(url: string, scheme: string, shown: string): void {
  if (!SERVER_SCHEMES.has(scheme)) return;
  let ok = url.slice(scheme.length + 1).startsWith('//');
  try {
    new URL(url);
  } catch {
    ok = false;
  }
  if (!ok) {
    throw new OncelyError(
      'INVALID_ARGUMENT',
      `malformed store URL ${JSON.stringify(shown)}: expected ${scheme}://[user[:password]@]host[:port][/database]`,
    );
  }
}
