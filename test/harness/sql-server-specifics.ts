/**
 * What PostgreSQL and MySQL/MariaDB must both do on a real server, beyond the conformance suite:
 * refuse to connect quickly and without leaking the password, report missing or newer tables as
 * `SCHEMA`, order keys by code point, keep tokens monotonic while sweep races acquire. Each store
 * file calls `describeSqlServerSpecifics` once and adds its backend's own tests in `more`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OncelyError, openStore } from '../../src/index.js';
import type { Store } from '../../src/store/types.js';
import { sweepRace } from '../fixtures/sweep-race.js';
import { type BackendTarget, testPrefix } from './backends.js';

/** An application's own connection pool, and the two things the suite does with it directly. */
export interface AppPool<P> {
  readonly pool: P;
  /** Runs `sql` (no parameters) and returns its rows. */
  rows(sql: string): Promise<unknown[]>;
  end(): Promise<void>;
}

export interface SqlServer<P> {
  /** Names the suite: `<name> store specifics`. */
  name: string;
  target: BackendTarget;
  /** Prefix of the file's conformance suite: its tables are dropped after this suite, with its own. */
  prefix: string;
  /** Short tag for the suite's table prefixes, e.g. `pg`. */
  tag: string;
  /** The application's pool on `url`, as the backend's docs recommend creating it. */
  openPool(url: string): AppPool<P>;
  /** The backend's store on the caller's `pool`, or (given a URL) on a pool it opens and owns. */
  newStore(prefix: string, on: P | string): Store;
  /** Statements dropping every table and sequence a store with `prefix` creates. */
  dropSchema(prefix: string): string[];
  /**
   * Statements turning a current schema with `prefix` into the layout of an older oncely: the
   * leases table without `sweep_at`, indexed on `expires_at` instead.
   */
  downgradeLeases(prefix: string): string[];
  /** The lease table's `key` column, quoted for this SQL dialect. */
  quotedKey: string;
  /** A URL of this backend on an address that never answers, with `hunter2-secret` as password. */
  unreachableUrl: string;
  /** Log in as this (nonexistent) user in the bad-credentials test; by default the URL's own user. */
  unknownUser?: string;
}

/** Handed to `more`, so backend-only tests share the suite's pool and clean-up. */
export interface SqlServerSuite<P> {
  /** The application's pool, open for the whole suite. */
  readonly pool: P;
  /** A table prefix of its own for one test, dropped after the suite. */
  fresh(label: string): string;
}

const SECRET = 'hunter2-secret';

/** Registers `<name> store specifics`: the shared tests, then the backend's own from `more`. */
export function describeSqlServerSpecifics<P>(
  server: SqlServer<P>,
  more?: (suite: SqlServerSuite<P>) => void,
): void {
  const url = server.target.url!;
  let app: AppPool<P>;
  const prefixes = [server.prefix];
  const suite: SqlServerSuite<P> = {
    get pool() {
      return app.pool;
    },
    fresh(label) {
      const p = testPrefix(`${server.tag}${label}`);
      prefixes.push(p);
      return p;
    },
  };

  /** `openStore(bad)` fails with STORE_UNAVAILABLE within `withinMs`, and never shows the password. */
  async function expectUnavailable(bad: string, withinMs: number, connectTimeoutMs = 10_000): Promise<void> {
    const started = Date.now();
    let err: unknown;
    try {
      const store = await openStore(bad, { prefix: server.prefix, connectTimeoutMs });
      await store.close();
    } catch (caught) {
      err = caught;
    }
    expect(err, `openStore(${bad}) succeeded`).toBeInstanceOf(OncelyError);
    expect((err as OncelyError).code).toBe('STORE_UNAVAILABLE');
    expect((err as OncelyError).message).not.toContain(SECRET);
    expect(Date.now() - started).toBeLessThan(withinMs);
  }

  /** The same server URL with other credentials or port. */
  function variant(change: (u: URL) => void): string {
    const u = new URL(url);
    change(u);
    return u.toString();
  }

  (server.target.skip ? describe.skip : describe)(`${server.name} store specifics`, () => {
    beforeAll(() => {
      app = server.openPool(url);
    });
    afterAll(async () => {
      for (const p of prefixes) for (const sql of server.dropSchema(p)) await app.rows(sql);
      await app.end();
    });

    it('works on the caller’s pool and leaves it open on close()', async () => {
      const store = server.newStore(suite.fresh('own'), app.pool);
      await store.migrate();
      const lock = await store.tryLock({ name: 'own-pool', lockAtMostFor: '10s' });
      expect(lock).not.toBeNull();
      expect(await store.tryLock({ name: 'own-pool', lockAtMostFor: '10s' })).toBeNull();
      expect(await lock!.extend('20s')).toBe(true);
      expect(await lock!.release()).toBe(true);
      await store.close();
      expect(await app.rows('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    });

    it('fails fast with STORE_UNAVAILABLE on a closed port, without the password', async () => {
      await expectUnavailable(
        variant((u) => {
          u.port = '1';
          u.password = SECRET;
        }),
        10_000,
      );
    });

    it('gives STORE_UNAVAILABLE for bad credentials, without the password', async () => {
      await expectUnavailable(
        variant((u) => {
          if (server.unknownUser !== undefined) u.username = server.unknownUser;
          u.password = SECRET;
        }),
        10_000,
      );
    });

    it('gives STORE_UNAVAILABLE within the connect timeout when the host does not answer', async () => {
      await expectUnavailable(server.unreachableUrl, 5_000, 1_000);
    });

    it('reports a dropped table as SCHEMA, and migrate() repairs it', async () => {
      const p = suite.fresh('drop');
      const store = server.newStore(p, url);
      await store.migrate();
      await store.put('k', 'v');
      await app.rows(`DROP TABLE ${p}leases`);
      await expect(store.tryLock({ name: 'x', lockAtMostFor: '1s' })).rejects.toMatchObject({
        code: 'SCHEMA',
      });
      await app.rows(`DROP TABLE ${p}records`);
      await expect(store.get('k')).rejects.toMatchObject({ code: 'SCHEMA' });
      await store.migrate();
      expect(await store.tryLock({ name: 'x', lockAtMostFor: '1s' })).not.toBeNull();
      await store.close();
    });

    it('upgrades the leases table of an older oncely in place: held leases stay held, expired ones are swept', async () => {
      const p = suite.fresh('upg');
      const old = server.newStore(p, url);
      await old.migrate();
      const held = await old.tryLock({ name: 'held', lockAtMostFor: '1h' });
      const brief = await old.tryLock({ name: 'brief', lockAtMostFor: '1ms' });
      expect(held && brief).toBeTruthy();
      await old.close();
      for (const sql of server.downgradeLeases(p)) await app.rows(sql);
      const columns = async () =>
        (await app.rows(`SELECT * FROM ${p}leases WHERE ${server.quotedKey} = 'lock:held'`)).map((r) =>
          Object.keys(r as object).sort(),
        );
      expect((await columns())[0]).not.toContain('sweep_at');

      const store = server.newStore(p, url);
      await store.migrate();
      expect((await columns())[0]).toContain('sweep_at');
      // The lease granted before the upgrade is still held; the expired one is gone at the first sweep.
      expect(await store.tryLock({ name: 'held', lockAtMostFor: '1s' })).toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 20));
      await store.sweep();
      const keys = (await app.rows(`SELECT ${server.quotedKey} AS k FROM ${p}leases`)).map(
        (r) => String((r as { k: unknown }).k), // MySQL's binary keys come back as Buffers
      );
      expect(keys).toEqual(['lock:held']);
      const again = await store.tryLock({ name: 'brief', lockAtMostFor: '1s' });
      expect(again?.token).toBeGreaterThan(brief!.token);
      await again?.release();
      // A second migrate of the now-current schema changes nothing.
      await store.migrate();
      expect(await store.tryLock({ name: 'held', lockAtMostFor: '1s' })).toBeNull();
      await store.close();
    });

    it('refuses a schema written by a newer oncely with SCHEMA', async () => {
      const p = suite.fresh('new');
      const store = server.newStore(p, app.pool);
      await store.migrate();
      await app.rows(`UPDATE ${p}meta SET value = '99' WHERE name = 'schema_version'`);
      await expect(store.migrate()).rejects.toMatchObject({
        code: 'SCHEMA',
        message: expect.stringContaining('99'),
      });
      await store.close();
    });

    it('keeps keys in code point order and compares them exactly', async () => {
      const store = server.newStore(suite.fresh('ord'), app.pool);
      await store.migrate();
      expect(await store.count('')).toBe(0);
      for (const k of ['a', 'a ', 'B', 'b', 'é', 'z', '🔒']) await store.put(k, k);
      expect((await store.scan('')).map((r) => r.key)).toEqual(['B', 'a', 'a ', 'b', 'z', 'é', '🔒']);
      // Reads compare exactly too: case and trailing spaces make other keys.
      expect(await store.getMany(['a ', 'A', 'a', 'b ', 'B'])).toEqual(['a ', null, 'a', null, 'B']);
      expect([
        await store.count(''),
        await store.count('a'),
        await store.count('a '),
        await store.count('A'),
      ]).toEqual([7, 2, 1, 0]);
      expect(store.capabilities).toMatchObject({ batchGet: true, serverCount: true });
      await store.close();
    });

    it('never lets a token go backwards when sweep deletes rows under racing acquires', async () => {
      const p = suite.fresh('race');
      const stores = await Promise.all(Array.from({ length: 9 }, () => openStore(url, { prefix: p })));
      // Raw SQL, so expired rows count too. Token 0 is no token: the MySQL re-grant's placeholder
      // row for a key that had none (see src/store/sql/mysql/regrant.ts), never granted.
      const read = async () => {
        const [row] = (await app.rows(
          `SELECT token FROM ${p}leases WHERE ${server.quotedKey} = 'race' AND token > 0`,
        )) as {
          token: number | string;
        }[];
        return row ? Number(row.token) : undefined;
      };
      const result = await sweepRace(stores, read, 3_000);
      await Promise.all(stores.map((s) => s.close()));
      expect(result.grants).toBeGreaterThan(100);
      expect(result.decreases).toBe(0);
    }, 30_000);

    more?.(suite);
  });
}
