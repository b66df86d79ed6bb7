import { invalidArgument } from '../core/errors.js';
import { describe, didYouMean } from '../core/options.js';
import type { BackendOptions } from './backend-options.js';

/** Options every scheme takes. */
const COMMON = ['prefix', 'connectTimeoutMs'] as const;

/** Options only one backend takes through `openStore`: the schemes it serves and its name for messages. */
const BACKEND_ONLY: Record<string, { backend: string; schemes: readonly string[] }> = {
  busyTimeoutMs: { backend: 'SQLite (sqlite:)', schemes: ['sqlite'] },
  preparedStatements: {
    backend: 'PostgreSQL (postgres://, postgresql://)',
    schemes: ['postgres', 'postgresql'],
  },
  shedlockTable: {
    backend: 'PostgreSQL and MySQL/MariaDB (postgres://, postgresql://, mysql://, mariadb://)',
    schemes: ['postgres', 'postgresql', 'mysql', 'mariadb'],
  },
};

/** Constructor options `openStore` never takes, with what to do instead. */
const CONSTRUCTOR_ONLY: Record<string, string> = {
  pool: 'to use your own pool, construct new PostgresStore({ pool }) (oncely/postgres) or new MysqlStore({ pool }) (oncely/mysql)',
  client:
    'to use your own client, construct new RedisStore({ client }) (oncely/redis) or new EtcdStore({ client, clockUrls }) (oncely/etcd)',
  database: 'to use your own database, construct new SqliteStore({ database }) (oncely/sqlite)',
  path: 'the URL names the file (sqlite:./file.db)',
  connectionString: 'the URL is the connection string',
  uri: 'the URL is the connection string',
  url: 'the URL is openStore’s first argument',
  space: 'name a shared memory space in the URL (memory:NAME)',
};

/** The option names `openStore` takes for `scheme` (a known, lower-case scheme). */
export function openOptionNames(scheme: string): string[] {
  const own = Object.keys(BACKEND_ONLY).filter((name) => BACKEND_ONLY[name]!.schemes.includes(scheme));
  return [...COMMON, ...own];
}

/**
 * Refuses every `openStore` option that would not be used for `scheme` (`INVALID_ARGUMENT`):
 * an unknown name (whatever its value: a misspelt name is a mistake even when unset, with a "did
 * you mean" hint), another backend's option with a value (naming that backend), and a
 * constructor-only option (saying what to do instead). Invariant: every option `openStore`
 * accepts for a scheme reaches that scheme's store; nothing is dropped silently.
 */
export function checkOpenOptions(options: unknown, scheme: string): void {
  const allowed = openOptionNames(scheme);
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw invalidArgument(
      `openStore options must be an object { ${allowed.join(', ')} }; got ${describe(options)}`,
    );
  }
  for (const [field, value] of Object.entries(options)) {
    if (allowed.includes(field)) continue;
    const only = BACKEND_ONLY[field];
    if (only) {
      // Unset is the default on every backend, so it is not refused (config objects spread it).
      if (value === undefined) continue;
      throw invalidArgument(
        `openStore option ${JSON.stringify(field)} is for ${only.backend} stores only, not for this ${scheme}: URL; allowed for ${scheme}: ${allowed.join(', ')}`,
      );
    }
    const instead = CONSTRUCTOR_ONLY[field];
    if (instead !== undefined)
      throw invalidArgument(`openStore does not take ${JSON.stringify(field)}: ${instead}`);
    throw invalidArgument(
      `unknown openStore option ${JSON.stringify(field)}${didYouMean(field, allowed)}; allowed for ${scheme}: ${allowed.join(', ')}`,
    );
  }
}

/** The backend-only options to hand `fromUrl`, set ones only (their values are checked by the store). */
export function backendOnlyOptions(options: {
  busyTimeoutMs?: number | undefined;
  preparedStatements?: boolean | undefined;
  shedlockTable?: string | undefined;
}): Pick<BackendOptions, 'busyTimeoutMs' | 'preparedStatements' | 'shedlockTable'> {
  return {
    ...(options.busyTimeoutMs !== undefined && { busyTimeoutMs: options.busyTimeoutMs }),
    ...(options.preparedStatements !== undefined && { preparedStatements: options.preparedStatements }),
    ...(options.shedlockTable !== undefined && { shedlockTable: options.shedlockTable }),
  };
}
