/**
 * Issue 9: no store option is silently ignored. Every store constructor and `openStore` refuse an
 * unknown name (naming it, suggesting the near one, listing the allowed ones), another backend's
 * option, an option that would be ignored with the caller's own handle, and a wrong type; and the
 * backend-only options `openStore` does accept really reach the store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { closestName, editDistance } from '../src/core/options.js';
import { type OpenStoreOptions, openStore } from '../src/index.js';
import { EtcdStore } from '../src/store/etcd.js';
import { MemoryStore } from '../src/store/memory.js';
import { MysqlStore } from '../src/store/mysql.js';
import { PostgresStore } from '../src/store/postgres.js';
import { RedisStore } from '../src/store/redis.js';
import { takeUrlOptions } from '../src/store/sql/postgres/url-options.js';
import { SqliteStore } from '../src/store/sqlite.js';
import { serverBackend, testPrefix } from './harness/backends.js';

const postgres = serverBackend('postgres');
const mysql = serverBackend('mysql');
const redis = serverBackend('redis');
const dir = mkdtempSync(join(tmpdir(), 'oncely-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The `INVALID_ARGUMENT` thrown by `make`, whose message must match every pattern. */
function refused(make: () => unknown, ...patterns: RegExp[]): void {
  let thrown: unknown;
  try {
    make();
  } catch (err) {
    thrown = err;
  }
  expect(thrown, 'expected an INVALID_ARGUMENT error').toMatchObject({ code: 'INVALID_ARGUMENT' });
  for (const pattern of patterns) expect((thrown as Error).message).toMatch(pattern);
}

async function openRefused(url: string, options: unknown, ...patterns: RegExp[]): Promise<void> {
  const opening = openStore(url, options as OpenStoreOptions);
  const err = await opening.then(
    async (store) => {
      await store.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(err, `openStore(${url}) should refuse ${JSON.stringify(options)}`).toMatchObject({
    code: 'INVALID_ARGUMENT',
  });
  for (const pattern of patterns) expect((err as Error).message).toMatch(pattern);
}

describe('did-you-mean helper', () => {
  it('measures insertions, deletions, substitutions and swaps as one edit each', () => {
    expect(editDistance('prefx', 'prefix')).toBe(1);
    expect(editDistance('perfix', 'prefix')).toBe(1);
    expect(editDistance('prefixx', 'prefix')).toBe(1);
    expect(editDistance('prefax', 'prefix')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });

  it('suggests only a near name, and a case-insensitive match first', () => {
    const known = ['path', 'database', 'prefix', 'busyTimeoutMs'];
    expect(closestName('prefx', known)).toBe('prefix');
    expect(closestName('PREFIX', known)).toBe('prefix');
    expect(closestName('busyTimeout', known)).toBe('busyTimeoutMs');
    expect(closestName('pth', known)).toBe('path');
    expect(closestName('colour', known)).toBeUndefined();
    expect(closestName('x', known)).toBeUndefined();
  });
});

describe('store constructors refuse unknown and ignored options', () => {
  it('MemoryStore', () => {
    refused(
      () => new MemoryStore({ spce: 'x' } as never),
      /unknown MemoryStore option "spce"/,
      /did you mean "space"/,
    );
    refused(() => new MemoryStore({ space: 7 } as never), /space must be a string/);
    refused(() => new MemoryStore(null as never), /options object/);
    expect(new MemoryStore({ space: 'options-test' })).toBeInstanceOf(MemoryStore);
  });

  it('SqliteStore', () => {
    refused(
      () => new SqliteStore({ path: ':memory:', prefx: 'app_' } as never),
      /unknown SqliteStore option "prefx"/,
      /did you mean "prefix"\?/,
      /allowed: path, database, prefix, busyTimeoutMs/,
    );
    refused(() => new SqliteStore({ path: ':memory:', colour: 1 } as never), /option "colour"; allowed:/);
    refused(() => new SqliteStore({ path: 5 } as never), /path must be a non-empty string/);
    refused(() => new SqliteStore({ path: ':memory:', prefix: 5 } as never), /prefix/);
    refused(() => new SqliteStore({ path: ':memory:', busyTimeoutMs: '5' } as never), /busyTimeoutMs/);
    const db = new Database(':memory:');
    // busy_timeout is set only on a file the store opens: with the caller's database it would be ignored.
    refused(
      () => new SqliteStore({ database: db, busyTimeoutMs: 50 }),
      /"busyTimeoutMs" only applies with \{ path \}/,
    );
    refused(() => new SqliteStore({ database: null } as never), /better-sqlite3 Database/);
    db.close();
  });

  it('PostgresStore', async () => {
    const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
    refused(
      () => new PostgresStore({ pool, connectTimeoutMS: 5 } as never),
      /unknown PostgresStore option "connectTimeoutMS"/,
      /did you mean "connectTimeoutMs"/,
      /allowed: pool, connectionString, prefix, connectTimeoutMs, preparedStatements/,
    );
    refused(
      () => new PostgresStore({ pool, connectTimeoutMs: 500 }),
      /only applies with \{ connectionString \}/,
    );
    refused(
      () => new PostgresStore({ pool, preparedStatements: 'no' } as never),
      /preparedStatements must be true or false/,
    );
    refused(
      () => new PostgresStore({ connectionString: 5 } as never),
      /connectionString must be a non-empty string/,
    );
    refused(
      () => new PostgresStore({ connectionString: 'postgres://h/db', connectTimeoutMs: 0 }),
      /connectTimeoutMs/,
    );
    refused(() => new PostgresStore({ pool: null } as never), /query\(\)/);
    // Constructing does not connect: a valid set of options builds a store that closes cleanly.
    const store = new PostgresStore({
      connectionString: 'postgres://nobody@127.0.0.1:1/none',
      connectTimeoutMs: 500,
    });
    await store.close();
    await pool.end();
  });

  it('MysqlStore', async () => {
    const pool = { query: async () => [[], []], getConnection: async () => ({}) } as never;
    refused(
      () => new MysqlStore({ pool, uir: 'mysql://x' } as never),
      /unknown MysqlStore option "uir"/,
      /did you mean "uri"/,
      /allowed: pool, uri, prefix, connectTimeoutMs/,
    );
    refused(
      () => new MysqlStore({ pool, preparedStatements: false } as never),
      /unknown MysqlStore option "preparedStatements"/,
    );
    refused(() => new MysqlStore({ pool, connectTimeoutMs: 500 }), /only applies with \{ uri \}/);
    refused(() => new MysqlStore({ uri: 42 } as never), /uri must be a non-empty string/);
    refused(() => new MysqlStore({ uri: 'mysql://h/db', connectTimeoutMs: -1 }), /connectTimeoutMs/);
    const store = new MysqlStore({ uri: 'mysql://nobody@127.0.0.1:1/none', connectTimeoutMs: 500 });
    await store.close();
  });

  it('RedisStore', async () => {
    const client = { call: async () => null };
    refused(
      () => new RedisStore({ client, prefx: 'a_' } as never),
      /unknown RedisStore option "prefx"/,
      /did you mean "prefix"/,
      /allowed: client, url, prefix, connectTimeoutMs/,
    );
    refused(() => new RedisStore({ client, connectTimeoutMs: 500 }), /only applies with \{ url \}/);
    refused(() => new RedisStore({ url: 'redis://127.0.0.1:1', connectTimeoutMs: -5 }), /connectTimeoutMs/);
    refused(
      () => new RedisStore({ url: 'redis://127.0.0.1:1', connectTimeoutMs: '5' } as never),
      /connectTimeoutMs/,
    );
    refused(() => new RedisStore({ url: 6379 } as never), /url must be a non-empty string/);
    refused(() => new RedisStore({ client, prefix: 5 } as never), /prefix/);
    refused(() => new RedisStore({ client: null } as never), /call\(\)/);
    const store = new RedisStore({ url: 'redis://127.0.0.1:1', connectTimeoutMs: 500 });
    await store.close();
  });

  it('EtcdStore', async () => {
    refused(
      () => new EtcdStore({ url: 'etcd://127.0.0.1:1', prefx: 'a_' } as never),
      /unknown EtcdStore option "prefx"/,
      /did you mean "prefix"/,
      /allowed: client, clockUrls, ca, url, prefix, connectTimeoutMs/,
    );
    refused(() => new EtcdStore({}), /exactly one of \{ client \} or \{ url \}/);
    refused(
      () => new EtcdStore({ url: 'etcd://127.0.0.1:1', clockUrls: ['http://127.0.0.1:1'] }),
      /only applies with \{ client \}/,
    );
    refused(() => new EtcdStore({ url: 'etcd://127.0.0.1:1', connectTimeoutMs: 0 }), /connectTimeoutMs/);
    const store = new EtcdStore({ url: 'etcd://127.0.0.1:1', connectTimeoutMs: 500 });
    await store.close();
  });
});

describe('openStore refuses options it would not use, per backend', () => {
  it('memory:', async () => {
    await openRefused(
      'memory:',
      { prefx: 'a_' },
      /unknown openStore option "prefx" \(did you mean "prefix"\?\)/,
      /allowed for memory: prefix, connectTimeoutMs$/,
    );
    await openRefused('memory:', { prefx: undefined }, /unknown openStore option "prefx"/);
    await openRefused(
      'memory:',
      { busyTimeoutMs: 100 },
      /"busyTimeoutMs" is for SQLite/,
      /not for this memory: URL/,
    );
    await openRefused('memory:', { space: 'x' }, /memory:NAME/);
    await openRefused('memory:', null, /options must be an object/);
    await openRefused('memory:', 'app_', /options must be an object/);
    await openRefused(
      'memory:',
      { connectTimeoutMs: '5' },
      /connectTimeoutMs must be a positive whole number; got "5"/,
    );
    await openRefused('memory:', { prefix: 7 }, /prefix 7 is invalid/);
  });

  it('sqlite:', async () => {
    const url = `sqlite:${join(dir, 'refused.db')}`;
    await openRefused(
      url,
      { prefx: 'app_' },
      /"prefx" \(did you mean "prefix"\?\); allowed for sqlite: prefix, connectTimeoutMs, busyTimeoutMs/,
    );
    await openRefused(url, { preparedStatements: false }, /is for PostgreSQL/, /not for this sqlite: URL/);
    await openRefused(url, { path: './other.db' }, /does not take "path": the URL names the file/);
    await openRefused(url, { database: {} }, /new SqliteStore\(\{ database \}\)/);
    await openRefused(url, { busyTimeoutMs: 'long' }, /busyTimeoutMs must be a whole number/);
  });

  it('sqlite: busyTimeoutMs reaches the store (a write waits that long for a held lock, not 10 s)', async () => {
    const path = join(dir, 'busy.db');
    const store = await openStore(`sqlite:${path}`, { busyTimeoutMs: 300 });
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      const started = performance.now();
      await expect(store.put('k', 'v')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThanOrEqual(250);
      expect(waited).toBeLessThan(5_000);
    } finally {
      other.exec('ROLLBACK');
      other.close();
      await store.close();
    }
  });

  it.skipIf(postgres.skip)('postgres:// (real server)', async () => {
    const url = postgres.url!;
    const prefix = testPrefix('opt_pg');
    await openRefused(
      url,
      { prefix, prefx: prefix },
      /unknown openStore option "prefx"/,
      /allowed for postgres: prefix, connectTimeoutMs, preparedStatements/,
    );
    await openRefused(
      url,
      { prefix, busyTimeoutMs: 100 },
      /is for SQLite \(sqlite:\) stores only, not for this postgres: URL/,
    );
    await openRefused(url, { prefix, pool: {} }, /new PostgresStore\(\{ pool \}\)/);
    await openRefused(
      url.replace(/^postgres:/, 'postgresql:'),
      { prefix, preparedStatment: false },
      /did you mean "preparedStatements"/,
    );
    await openRefused(url, { prefix, preparedStatements: 'off' }, /preparedStatements must be true or false/);
  });

  it.skipIf(postgres.skip)(
    'postgres:// preparedStatements: false reaches the store (no statement names sent)',
    async () => {
      const spy = vi.spyOn(pg.Pool.prototype, 'query');
      try {
        const named = async (options: OpenStoreOptions, query = ''): Promise<number> => {
          spy.mockClear();
          const store = await openStore(`${postgres.url!}${query}`, {
            prefix: testPrefix('opt_ps'),
            ...options,
          });
          try {
            expect(await store.tryLock({ name: 'ps', lockAtMostFor: '5s' })).not.toBeNull();
            await store.put('ps', 'v');
          } finally {
            await store.close();
          }
          const configs = spy.mock.calls.map((call) => call[0] as unknown as { name?: string });
          expect(configs.length).toBeGreaterThan(0);
          return configs.filter((c) => typeof c === 'object' && c.name !== undefined).length;
        };
        expect(await named({})).toBeGreaterThan(0);
        expect(await named({ preparedStatements: false })).toBe(0);
        // Where only a URL can be given (the CLI, ONCELY_STORE): oncely's own query parameter.
        expect(await named({}, '?oncely_prepared_statements=false')).toBe(0);
        expect(await named({}, '?application_name=oncely-test&oncely_prepared_statements=false')).toBe(0);
        expect(await named({}, '?oncely_prepared_statements=true')).toBeGreaterThan(0);
        expect(await named({ preparedStatements: false }, '?oncely_prepared_statements=false')).toBe(0);
      } finally {
        spy.mockRestore();
      }
    },
  );

  it('postgres:// oncely_prepared_statements: taken off the URL before pg sees it; a bad one refused', async () => {
    const base = 'postgres://u:secret@db.internal:6432/app';
    expect(takeUrlOptions(`${base}?oncely_prepared_statements=false`)).toEqual({
      url: base,
      preparedStatements: false,
    });
    // Every other byte of the URL stays as given (pg's own parameters, their encoding, a fragment).
    expect(
      takeUrlOptions(`${base}?sslmode=require&oncely_prepared_statements=true&options=-c%20x%3D1#f`),
    ).toEqual({ url: `${base}?sslmode=require&options=-c%20x%3D1#f`, preparedStatements: true });
    expect(takeUrlOptions(`${base}?application_name=a+b`)).toEqual({ url: `${base}?application_name=a+b` });
    // Bad values, repeats and unknown oncely_ names: INVALID_ARGUMENT before any connection (the
    // host does not exist), and the password is never in the message.
    for (const [query, pattern] of [
      ['?oncely_prepared_statements=no', /oncely_prepared_statements must be true or false; got "no"/],
      ['?oncely_prepared_statements', /must be true or false; got ""/],
      ['?oncely_prepared_statements=true&oncely_prepared_statements=false', /given 2 times/],
      ['?oncely_prepared_statement=false', /unknown store URL parameter "oncely_prepared_statement"/],
    ] as const) {
      await openRefused(`${base}${query}`, { connectTimeoutMs: 1_000 }, pattern, /^(?!.*secret)/s);
      refused(() => new PostgresStore({ connectionString: `${base}${query}` }), pattern);
    }
    // The option and the URL must not disagree.
    refused(
      () =>
        new PostgresStore({
          connectionString: `${base}?oncely_prepared_statements=false`,
          preparedStatements: true,
        }),
      /preparedStatements is true but the URL says oncely_prepared_statements=false/,
    );
  });

  it.skipIf(mysql.skip)('mysql:// and mariadb:// (real server)', async () => {
    const url = mysql.url!;
    const prefix = testPrefix('opt_my');
    await openRefused(
      url,
      { prefix, preparedStatements: false },
      /is for PostgreSQL/,
      /not for this mysql: URL; allowed for mysql: prefix, connectTimeoutMs, shedlockTable$/,
    );
    await openRefused(
      url.replace(/^mysql:/, 'mariadb:'),
      { prefix, busyTimeoutMs: 5 },
      /is for SQLite/,
      /mariadb: URL/,
    );
    await openRefused(url, { prefix, uri: url }, /does not take "uri"/);
    await openRefused(url, { prefix, conectTimeoutMs: 5_000 }, /did you mean "connectTimeoutMs"/);
    // The common options are taken and the store works.
    const store = await openStore(url, { prefix, connectTimeoutMs: 10_000 });
    expect(await store.tryLock({ name: 'mysql-options', lockAtMostFor: '2s' })).not.toBeNull();
    await store.close();
  });

  it.skipIf(redis.skip)('redis:// (real server)', async () => {
    const url = redis.url!;
    const prefix = testPrefix('opt_rd');
    await openRefused(
      url,
      { prefix, busyTimeoutMs: 5 },
      /is for SQLite/,
      /not for this redis: URL; allowed for redis: prefix, connectTimeoutMs$/,
    );
    await openRefused(url, { prefix, client: {} }, /new RedisStore\(\{ client \}\)/);
    await openRefused(url, { prefix, prefix_: 'x' }, /did you mean "prefix"/);
    // An unset backend-only option is the default everywhere: accepted (config objects spread it).
    const store = await openStore(url, { prefix, busyTimeoutMs: undefined, preparedStatements: undefined });
    expect(await store.tryLock({ name: 'redis-options', lockAtMostFor: '2s' })).not.toBeNull();
    await store.close();
  });
});
