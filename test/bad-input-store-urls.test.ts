/**
 * Bad store URLs and `openStore` options, catalogued (docs/faults.md, "Bad input"). Every one is
 * `INVALID_ARGUMENT` (the CLI exits 2 for it) naming what is wrong, never showing the password,
 * and — where a driver would connect anyway — refused before any connection is tried.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type OpenStoreOptions, openStore } from '../src/index.js';
import { invalid } from './fixtures/bad-input.js';
import { serverBackend, testPrefix } from './harness/backends.js';

const redis = serverBackend('redis');
const dir = mkdtempSync(join(tmpdir(), 'oncely-bad-urls-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** openStore(url) must be refused with every pattern, and the message must not hold `secret`. */
async function refusedUrl(url: string, options: OpenStoreOptions, ...patterns: RegExp[]): Promise<void> {
  const err = await invalid(async () => (await openStore(url, options)).close(), ...patterns);
  expect(err.message).not.toContain('secret');
}

describe('openStore: bad URLs', () => {
  it.each<[string, string, RegExp[]]>([
    [
      'misspelt scheme postgress://',
      'postgress://u:secret@db/app',
      [/unknown store URL "postgress:\/\/u:\*\*\*@db\/app": use memory:, sqlite:PATH, postgres:\/\//],
    ],
    [
      'a bare file path (no scheme)',
      './oncely.db',
      [/unknown store URL "\.\/oncely\.db": use memory:, sqlite:PATH/],
    ],
    [
      'http:// for etcd',
      'http://127.0.0.1:2379',
      [/unknown store URL "http:\/\/127\.0\.0\.1:2379": use .*etcd:\/\//],
    ],
    ['empty URL', '  ', [/store URL must be a non-empty string such as sqlite:\.\/oncely\.db/]],
    [
      'postgres port 99999',
      'postgres://u:secret@db:99999/app',
      [
        /malformed store URL "postgres:\/\/u:\*\*\*@db:99999\/app": expected postgres:\/\/\[user\[:password\]@\]host\[:port\]\[\/database\]/,
      ],
    ],
    ['postgres port not a number', 'postgres://u:secret@db:port/app', [/malformed store URL/]],
    ['mysql without //', 'mysql:db/app', [/malformed store URL "mysql:db\/app"/]],
    ['redis with no host', 'redis://:secret@/0', [/malformed store URL "redis:\/\/:\*\*\*@\/0"/]],
    [
      'redis database -1',
      'redis://127.0.0.1:6379/-1',
      [/bad Redis URL "redis:\/\/127\.0\.0\.1:6379\/-1": the database must be a number, got "-1"/],
    ],
    [
      'redis database not a number',
      'redis://127.0.0.1:6379/cache',
      [/the database must be a number, got "cache"/],
    ],
    [
      'redis with query parameters',
      'redis://:secret@127.0.0.1:6379/0?tls=true',
      [/bad Redis URL .*: query parameters and fragments are not supported/],
    ],
    [
      'etcd with a path',
      'etcd://127.0.0.1:2379/v3',
      [/bad etcd URL "etcd:\/\/127\.0\.0\.1:2379\/v3": a path is not supported/],
    ],
    ['etcd port 99999', 'etcd://127.0.0.1:99999', [/bad etcd URL .*: port 99999 is out of range/]],
    ['etcd with no host', 'etcd://', [/bad etcd URL "etcd:\/\/": the host is missing/]],
    [
      'etcd password without a user',
      'etcd://:secret@127.0.0.1:2379',
      [/a password needs a user name \(etcd users have names\)/],
    ],
    ['etcd host with a space', 'etcd://a b:2379', [/"a b:2379" is not a host\[:port\]/]],
    ['sqlite: with no file', 'sqlite:', [/sqlite URL "sqlite:" names no file: use sqlite:\.\/file\.db/]],
    ['sqlite://host/file (a host)', 'sqlite://host/file.db', [/names no file/]],
  ])('%s', async (_title, url, patterns) => {
    await refusedUrl(url, {}, ...patterns);
  });

  it('postgres query parameter sslmod (misspelt sslmode): refused before connecting, not ignored', async () => {
    // Port 1: nothing listens; a refusal that came from connecting would be STORE_UNAVAILABLE.
    await refusedUrl(
      'postgres://u:secret@127.0.0.1:1/app?sslmod=require',
      {},
      /store URL "postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/app\?sslmod=require": unknown query parameter "sslmod" \(did you mean "sslmode"\?\)/,
    );
  });

  it('postgres query parameter connect_timeout (ignored by pg): refused, pointing at connectTimeoutMs', async () => {
    await refusedUrl(
      'postgresql://u:secret@127.0.0.1:1/app?connect_timeout=5',
      {},
      /unknown query parameter "connect_timeout": use the connectTimeoutMs option of openStore/,
    );
  });

  it('sqlite: in a directory that does not exist', async () => {
    const path = join(dir, 'missing', 'oncely.db');
    await refusedUrl(
      `sqlite:${path}`,
      {},
      /the directory of ".*missing\/oncely\.db" \(.*missing\) does not exist; create it first or fix the path/,
    );
  });

  it('sqlite: under a regular file (file.txt/oncely.db)', async () => {
    const file = join(dir, 'plain.txt');
    writeFileSync(file, 'x');
    await refusedUrl(
      `sqlite:${join(file, 'oncely.db')}`,
      {},
      /the directory of ".*plain\.txt\/oncely\.db" \(.*plain\.txt\) is not a directory/,
    );
  });

  it('sqlite: naming a directory', async () => {
    await refusedUrl(
      `sqlite:${dir}`,
      {},
      /is a directory; name a database file in it, e\.g\. sqlite:.*oncely\.db/,
    );
  });

  it('sqlite: a file that is not a database: STORE_UNAVAILABLE saying so, not a crash', async () => {
    const path = join(dir, 'notes.txt');
    writeFileSync(path, 'these are not the tables you are looking for\n'.repeat(100));
    const err = await openStore(`sqlite:${path}`).then(
      async (s) => {
        await s.close();
        return undefined;
      },
      (e: unknown) => e as { code?: string; message: string },
    );
    expect(err?.code, err?.message).toBe('STORE_UNAVAILABLE');
    expect(err?.message).toMatch(/not a database/);
  });

  it.skipIf(redis.skip)(
    'redis database 99 (the server has 16): refused, not silently database 0',
    async () => {
      const url = new URL(redis.url!);
      url.pathname = '/99';
      await refusedUrl(
        url.toString(),
        { prefix: testPrefix('bad_db') },
        /redis store: database 99 of the store URL does not exist on this server \(ERR DB index is out of range\); use a number below the server's "databases" setting/,
      );
    },
  );
});

describe('openStore: bad options', () => {
  it.each<[string, unknown, RegExp[]]>([
    [
      'prefix with a dash (my-app)',
      { prefix: 'my-app' },
      [/prefix "my-app" is invalid: use 1-31 letters, digits or '_', starting with a letter or '_'/],
    ],
    ['prefix starting with a digit', { prefix: '9lives' }, [/prefix "9lives" is invalid/]],
    ['prefix of 32 characters', { prefix: 'p'.repeat(32) }, [/prefix "p{32}" is invalid: use 1-31/]],
    ['prefix with a quote', { prefix: "a'b" }, [/prefix "a'b" is invalid/]],
    [
      'misspelt option prefx',
      { prefx: 'app_' },
      [
        /unknown openStore option "prefx" \(did you mean "prefix"\?\); allowed for memory: prefix, connectTimeoutMs/,
      ],
    ],
    [
      'connectTimeoutMs 0',
      { connectTimeoutMs: 0 },
      [/connectTimeoutMs must be a positive whole number; got number 0/],
    ],
    [
      "another backend's option (busyTimeoutMs on memory:)",
      { busyTimeoutMs: 5 },
      [/openStore option "busyTimeoutMs" is for SQLite \(sqlite:\) stores only, not for this memory: URL/],
    ],
  ])('%s', async (_title, options, patterns) => {
    await refusedUrl('memory:', options as OpenStoreOptions, ...patterns);
  });
});
