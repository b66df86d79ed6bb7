import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { OncelyError, openStore } from '../src/index.js';
import { SqliteStore, sqlitePath } from '../src/store/sqlite.js';
import { describeStore } from '../src/testing/index.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-sqlite-'));
const file = join(dir, 'conformance.db');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Every factory call opens its own connection to the same file, as separate processes would.
describeStore('sqlite', async () => {
  const store = new SqliteStore({ path: file });
  await store.migrate();
  return store;
});
describeStore('sqlite via openStore', () => openStore(`sqlite:${join(dir, 'url.db')}`, { prefix: 'u_' }));

describe('sqlite store specifics', () => {
  it('parses sqlite: URLs', () => {
    expect(sqlitePath('sqlite:./file.db')).toBe('./file.db');
    expect(sqlitePath('sqlite:file.db')).toBe('file.db');
    expect(sqlitePath('sqlite:/abs/file.db')).toBe('/abs/file.db');
    expect(sqlitePath('sqlite:///abs/file.db')).toBe('/abs/file.db');
    expect(sqlitePath('SQLite::memory:')).toBe(':memory:');
    for (const bad of ['sqlite:', 'sqlite://host/file.db', 'sqlite://']) {
      expect(() => sqlitePath(bad)).toThrow(OncelyError);
    }
  });

  it('opens sqlite:///abs paths and sqlite::memory: through openStore', async () => {
    const abs = await openStore(`sqlite://${join(dir, 'abs.db')}`);
    expect(abs.capabilities).toMatchObject({
      durability: 'disk',
      multiProcess: true,
      multiHost: false,
      serverTime: false,
    });
    await abs.close();
    const memory = await openStore('sqlite::memory:');
    expect(memory.capabilities).toMatchObject({ durability: 'memory', multiProcess: false });
    expect(await memory.tryLock({ name: 'm', lockAtMostFor: '1s' })).not.toBeNull();
    expect(await memory.count('')).toBe(0);
    expect(await memory.getMany(['m'])).toEqual([null]);
    await memory.close();
  });

  it('puts a file it opens in WAL mode', async () => {
    const store = new SqliteStore({ path: join(dir, 'wal.db') });
    await store.migrate();
    const db = new Database(join(dir, 'wal.db'));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
    await store.close();
  });

  it('works on the caller’s database and leaves it open on close()', async () => {
    const db = new Database(join(dir, 'own.db'));
    db.defaultSafeIntegers(true);
    const store = new SqliteStore({ database: db, prefix: 'own_' });
    await store.migrate();
    const lock = await store.tryLock({ name: 'own', lockAtMostFor: '10s' });
    expect(typeof lock!.token).toBe('number');
    expect(await lock!.extend('20s')).toBe(true);
    expect(typeof (await store.now())).toBe('number');
    expect(await lock!.release()).toBe(true);
    await store.close();
    expect(db.open).toBe(true);
    db.close();
  });

  it('reads the clock from SQLite, not from Date.now()', async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    const spy = vi.spyOn(Date, 'now').mockReturnValue(0);
    try {
      expect(Math.abs((await store.now()) - (performance.timeOrigin + performance.now()))).toBeLessThan(
        5_000,
      );
    } finally {
      spy.mockRestore();
    }
    await store.close();
  });

  it('gives STORE_UNAVAILABLE for a file it cannot open', async () => {
    // /proc takes no new files, whoever asks (a read-only directory would not stop root). A
    // missing directory is bad input instead: test/bad-input-store-urls.test.ts.
    await expect(openStore('sqlite:/proc/oncely-cannot-create.db')).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
  });

  it('reports a dropped table as SCHEMA, and migrate() repairs it', async () => {
    const path = join(dir, 'drop.db');
    const store = new SqliteStore({ path });
    await store.migrate();
    await store.put('k', 'v');
    const db = new Database(path);
    db.exec('DROP TABLE oncely_leases; DROP TABLE oncely_records');
    db.close();
    await expect(store.tryLock({ name: 'x', lockAtMostFor: '1s' })).rejects.toMatchObject({ code: 'SCHEMA' });
    await expect(store.get('k')).rejects.toMatchObject({ code: 'SCHEMA' });
    await store.migrate();
    expect(await store.tryLock({ name: 'x', lockAtMostFor: '1s' })).not.toBeNull();
    await store.close();
  });

  it('refuses a schema written by a newer oncely with SCHEMA', async () => {
    const db = new Database(':memory:');
    const store = new SqliteStore({ database: db });
    await store.migrate();
    db.exec(`UPDATE oncely_meta SET value = '99' WHERE name = 'schema_version'`);
    await expect(store.migrate()).rejects.toMatchObject({
      code: 'SCHEMA',
      message: expect.stringContaining('99'),
    });
    db.close();
  });

  it('upgrades a database made before the fence triggers, and refuses to grant until migrated', async () => {
    const db = new Database(':memory:');
    // The schema as the first release created it: no triggers; acquire set the counter itself.
    db.exec(`
      CREATE TABLE oncely_meta (name TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE oncely_leases ("key" TEXT NOT NULL PRIMARY KEY, owner TEXT NOT NULL, token INTEGER NOT NULL,
        acquired_at INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
      CREATE INDEX oncely_leases_expires_at ON oncely_leases (expires_at);
      CREATE TABLE oncely_records ("key" TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL, expires_at INTEGER);
      CREATE INDEX oncely_records_expires_at ON oncely_records (expires_at);
      CREATE TABLE oncely_fence (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
      INSERT INTO oncely_fence (id, value) VALUES (1, 41);
      INSERT INTO oncely_leases VALUES ('old', 'o', 41, 0, 1);
      INSERT INTO oncely_meta (name, value) VALUES ('schema_version', '1');`);
    const store = new SqliteStore({ database: db });
    const request = { key: 'old', owner: 'o', leaseMs: 10_000 };
    // Without the triggers the counter would stand still: a SCHEMA error, never a grant.
    await expect(store.acquire([request])).rejects.toMatchObject({ code: 'SCHEMA' });
    await expect(store.acquire([request, { ...request, key: 'new' }])).rejects.toMatchObject({
      code: 'SCHEMA',
    });
    await store.migrate();
    await store.migrate(); // idempotent
    expect((await store.acquire([request]))[0]?.token).toBe(42);
    const batch = await store.acquire([
      { ...request, key: 'b' },
      { ...request, key: 'old' },
      { ...request, key: 'a' },
    ]);
    expect(batch.map((l) => l?.token ?? null)).toEqual([44, null, 43]);
    const fence = () => (db.prepare('SELECT value FROM oncely_fence').get() as { value: number }).value;
    expect(fence()).toBe(44);
    // An older oncely sharing the file (read counter, upsert, set counter) stays in step.
    db.transaction(() => {
      const value = fence();
      db.prepare(
        `INSERT INTO oncely_leases ("key", owner, token, acquired_at, expires_at) VALUES ('older', 'o', ?, 0, 9e15)
         ON CONFLICT ("key") DO UPDATE SET token = excluded.token`,
      ).run(value + 1);
      db.prepare('UPDATE oncely_fence SET value = ? WHERE id = 1').run(value + 1);
    }).immediate();
    expect((await store.acquire([{ ...request, key: 'c' }]))[0]?.token).toBe(46);
    db.close();
  });

  it('refuses to grant with SCHEMA when the fence counter row is missing', async () => {
    const db = new Database(':memory:');
    const store = new SqliteStore({ database: db });
    await store.migrate();
    const lease = await store.tryLock({ name: 'held', lockAtMostFor: '1ms' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    db.exec('DELETE FROM oncely_fence');
    await expect(store.tryLock({ name: 'free', lockAtMostFor: '1s' })).rejects.toMatchObject({
      code: 'SCHEMA',
    });
    // The expired key takes the conflict path: the NOT NULL check still comes first.
    await expect(store.tryLock({ name: lease!.name, lockAtMostFor: '1s' })).rejects.toMatchObject({
      code: 'SCHEMA',
    });
    await store.migrate(); // a fresh counter at 0: the old key must not get token 1 again
    expect(await store.tryLock({ name: lease!.name, lockAtMostFor: '1s' })).toBeNull();
    expect((await store.tryLock({ name: 'free', lockAtMostFor: '1s' }))?.token).toBe(1);
    db.close();
  });

  it('keeps keys in code point order and compares them exactly', async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.migrate();
    for (const k of ['a', 'a ', 'B', 'b', 'A', 'é', 'z', '🔒']) await store.put(k, k);
    expect((await store.scan('')).map((r) => r.key)).toEqual(['A', 'B', 'a', 'a ', 'b', 'z', 'é', '🔒']);
    expect((await store.scan('a')).map((r) => r.key)).toEqual(['a', 'a ']);
    await store.close();
  });

  it('rejects bad options with INVALID_ARGUMENT', () => {
    expect(() => new SqliteStore({})).toThrow(/exactly one/);
    expect(() => new SqliteStore({ path: ':memory:', prefix: 'no-dash' })).toThrow(OncelyError);
    expect(() => new SqliteStore({ path: ':memory:', nope: 1 } as never)).toThrow(
      /unknown SqliteStore option/,
    );
  });
});
