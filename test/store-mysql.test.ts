import mysql from 'mysql2/promise';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore } from '../src/index.js';
import { type MysqlPoolLike, MysqlStore } from '../src/store/mysql.js';
import type { WriteOp } from '../src/store/types.js';
import { describeStore } from '../src/testing/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { noBackslashEscapesPool } from './harness/mysql-modes.js';
import { refused } from './harness/refused.js';
import { describeSqlServerSpecifics } from './harness/sql-server-specifics.js';

const target = serverBackend('mysql');
const prefix = testPrefix('my');

describeStore('mysql', () => openStore(target.url!, { prefix }), { skip: target.skip });

// The whole suite again on a caller's pool whose sessions have sql_mode NO_BACKSLASH_ESCAPES (a
// backslash is then no escape), with and without multipleStatements: every value must still be data.
// The pool without multipleStatements also answers `SELECT VERSION()` as MySQL 8 does, so the
// store takes the paths for a server without RETURNING (the re-grant's, and one DELETE per op in
// apply) — on MariaDB, which runs them too.
for (const multipleStatements of [true, false]) {
  const modePrefix = testPrefix(`mynbe${multipleStatements ? 'm' : 'p'}`);
  let pool: mysql.Pool | undefined;
  describeStore(
    `mysql (NO_BACKSLASH_ESCAPES${multipleStatements ? '' : ', no multipleStatements, no RETURNING'})`,
    async () => {
      pool ??= noBackslashEscapesPool(target.url!, { multipleStatements });
      const store = new MysqlStore({ pool: multipleStatements ? pool : asMysql8(pool), prefix: modePrefix });
      await store.migrate();
      return store;
    },
    { skip: target.skip },
  );
  afterAll(async () => {
    if (!pool) return;
    for (const table of ['leases', 'records', 'fence', 'meta'])
      await pool.query(`DROP TABLE IF EXISTS ${modePrefix}${table}`);
    await pool.end();
  });
}

/** `pool`, but `SELECT VERSION()` answers as MySQL 8.0 (which has no INSERT/DELETE … RETURNING). */
function asMysql8(pool: mysql.Pool): MysqlPoolLike {
  const version = (sql: string) => /^SELECT VERSION\(\)/i.test(sql);
  return {
    query: (sql, values) =>
      version(sql)
        ? Promise.resolve([[{ v: '8.0.36' }], []] as [unknown, unknown])
        : pool.query(sql, values as never),
    execute: (sql, values) => pool.execute(sql, values as never),
    getConnection: () => pool.getConnection(),
  };
}

describeSqlServerSpecifics<mysql.Pool>(
  {
    name: 'mysql',
    target,
    prefix,
    tag: 'my',
    openPool(url) {
      // As MysqlStore's docs recommend: multipleStatements makes acquire one round trip.
      const pool = mysql.createPool({ uri: url, connectionLimit: 4, multipleStatements: true });
      return { pool, rows: async (sql) => (await pool.query(sql))[0] as unknown[], end: () => pool.end() };
    },
    newStore: (p, on) =>
      typeof on === 'string'
        ? new MysqlStore({ uri: on, prefix: p })
        : new MysqlStore({ pool: on, prefix: p }),
    dropSchema: (p) =>
      ['leases', 'records', 'fence', 'meta'].map((table) => `DROP TABLE IF EXISTS ${p}${table}`),
    downgradeLeases: (p) => [
      `ALTER TABLE ${p}leases DROP INDEX ${p}leases_sweep_at, DROP COLUMN sweep_at, ADD INDEX ${p}leases_expires_at (expires_at)`,
    ],
    quotedKey: '`key`',
    unreachableUrl: 'mariadb://u:hunter2-secret@10.255.255.1:3306/db',
  },
  (suite) => {
    let plainPool: mysql.Pool;
    beforeAll(() => {
      plainPool = mysql.createPool({ uri: target.url!, connectionLimit: 4 });
    });
    afterAll(async () => {
      await plainPool.end();
    });

    it('prepared statements on a mysql2/promise pool go through its callback pool (no Error made per call), unless its execute was replaced; errors keep their errno', async () => {
      const core = suite.pool.pool as unknown as { execute: (...args: unknown[]) => unknown };
      const stacks: string[] = [];
      const spyCore = Object.assign(Object.create(Object.getPrototypeOf(core)), core, {
        execute: (...args: unknown[]) => {
          stacks.push(new Error().stack ?? '');
          return core.execute.apply(core, args);
        },
      });
      /** A copy of the suite's pool (same class) on the spied callback pool, with `own` as its own properties. */
      const copy = (own: object) =>
        Object.assign(Object.create(Object.getPrototypeOf(suite.pool)) as mysql.Pool, suite.pool, {
          pool: spyCore,
          ...own,
        });
      const cycles = async (store: MysqlStore) => {
        await store.migrate();
        const lock = await store.tryLock({ name: 'core-path', lockAtMostFor: '10s' });
        expect(lock).not.toBeNull();
        expect(await store.tryLock({ name: 'core-path', lockAtMostFor: '10s' })).toBeNull();
        await lock!.release();
        const again = await store.tryLock({ name: 'core-path', lockAtMostFor: '10s' });
        expect(again!.token).toBeGreaterThan(lock!.token);
        await again!.release();
      };

      // mysql2's own PromisePool: straight to the callback pool, never through the wrapper.
      const p = suite.fresh('core');
      const store = new MysqlStore({ pool: copy({}), prefix: p });
      await cycles(store);
      expect(stacks.length).toBeGreaterThanOrEqual(4);
      expect(stacks.filter((s) => s.includes('PromisePool.execute'))).toEqual([]);
      // A server error through the callback path is still classified by its errno (1146: SCHEMA).
      await suite.pool.query(`DROP TABLE ${p}leases`);
      await expect(store.tryLock({ name: 'core-path', lockAtMostFor: '10s' })).rejects.toMatchObject({
        code: 'SCHEMA',
      });
      await store.close();

      // A pool whose execute the caller replaced (logging, tracing): every statement goes through it.
      let logged = 0;
      const wrapped = suite.pool.execute.bind(suite.pool);
      const logging = new MysqlStore({
        pool: copy({
          execute: (sql: string, values: never) => {
            logged++;
            return wrapped(sql, values);
          },
        }),
        prefix: suite.fresh('core2'),
      });
      await cycles(logging);
      expect(logged).toBeGreaterThanOrEqual(4);
      await logging.close();
    });

    it('works on a pool without multipleStatements (statement by statement)', async () => {
      const p = suite.fresh('plain');
      const store = new MysqlStore({ pool: plainPool, prefix: p });
      await store.migrate();
      const granted = await store.acquire([
        { key: 'b', owner: 'o', leaseMs: 10_000 },
        { key: 'a', owner: 'o', leaseMs: 50 },
      ]);
      expect(granted.every(Boolean)).toBe(true);
      expect(await store.acquire([{ key: 'b', owner: 'p', leaseMs: 10_000 }])).toEqual([null]);
      await new Promise((r) => setTimeout(r, 100));
      const [again] = await store.acquire([{ key: 'a', owner: 'p', leaseMs: 10_000 }]);
      expect(again!.token).toBeGreaterThan(granted[1]!.token);
      expect(await store.sweep()).toMatchObject({ leases: expect.any(Number) });
      expect(await store.release('b', granted[0]!.token)).toBe(true);
      await store.close();
      const [rows] = await plainPool.query('SELECT 1 AS one');
      expect(rows).toEqual([{ one: 1 }]);
    });

    it('reads a batch and counts in one prepared statement each, or with hex literals on a pool without execute', async () => {
      for (const prepared of [true, false]) {
        const sent: { via: string; sql: string; values: unknown }[] = [];
        const pool = suite.pool;
        const counting: MysqlPoolLike = {
          query: (sql, values) => {
            sent.push({ via: 'query', sql: sql as string, values });
            return pool.query(sql as string, values);
          },
          getConnection: () => pool.getConnection(),
        };
        if (prepared) {
          counting.execute = (sql, values) => {
            sent.push({ via: 'execute', sql: sql as string, values });
            return pool.execute(sql as string, values as never);
          };
        }
        const store = new MysqlStore({ pool: counting, prefix: suite.fresh('rd') });
        await store.migrate();
        const odd = "x\\'; DROP TABLE t; -- ";
        await store.apply([
          { op: 'put', key: odd, value: 'o' },
          { op: 'put', key: 'a', value: 'A' },
        ]);
        sent.length = 0;
        expect(await store.getMany(['a', odd, 'b', 'a'])).toEqual(['A', 'o', null, 'A']);
        expect(await store.count('')).toBe(2);
        expect(await store.count("x\\'")).toBe(1);
        expect(sent.map((s) => s.via)).toEqual(Array(3).fill(prepared ? 'execute' : 'query'));
        for (const s of sent) {
          expect(s.sql).not.toContain('DROP');
          if (!prepared) expect(s.values).toEqual([]);
        }
        await store.close();
      }
    });

    it('applies a batch in one query, and statement by statement without multipleStatements', async () => {
      for (const pool of [suite.pool, plainPool]) {
        let queries = 0;
        const counting: MysqlPoolLike = {
          query: (sql, values) => {
            queries++;
            return pool.query(sql as string, values);
          },
          execute: (sql, values) => {
            queries++;
            return pool.execute(sql as string, values as never);
          },
          getConnection: async () => {
            const conn = await pool.getConnection();
            return {
              query: (sql: string, values?: unknown) => {
                queries++;
                return conn.query(sql, values);
              },
              release: () => conn.release(),
            };
          },
        };
        const p = suite.fresh('rt');
        const store = new MysqlStore({ pool: counting, prefix: p });
        await store.migrate();
        // The multipleStatements and RETURNING probes happen once per store, before counting.
        await store.now();
        await store.acquire([{ key: 'probe', owner: 'o', leaseMs: 10_000 }]);
        const [occurrence, gate] = await store.acquire([
          { key: 'occ', owner: 'o', leaseMs: 10_000 },
          { key: 'gate', owner: 'o', leaseMs: 10_000 },
        ]);
        await store.put('running', 'r');
        const hold = (await store.now()) + 10_000;
        queries = 0;
        const ops: WriteOp[] = [
          { op: 'put', key: 'history', value: 'done', ttlMs: 60_000 },
          { op: 'delete', key: 'running' },
          { op: 'release', key: 'occ', token: occurrence!.token, holdUntil: hold },
          { op: 'release', key: 'gate', token: gate!.token + 1 },
          { op: 'release', key: 'gate', token: gate!.token },
        ];
        expect(await store.apply(ops)).toEqual([true, true, true, false, true]);
        // One by one: START TRANSACTION, the script's clock reading, the ops, COMMIT.
        expect(queries).toBe(pool === plainPool ? ops.length + 3 : 1);
        expect((await store.inspect('occ'))?.expiresAt).toBe(hold);
        // All or nothing: a failing statement rolls back the ops before it.
        await pool.query(`DROP TABLE ${p}leases`);
        await expect(
          store.apply([
            { op: 'put', key: 'aon', value: 'v' },
            { op: 'release', key: 'occ', token: occurrence!.token },
          ]),
        ).rejects.toMatchObject({ code: 'SCHEMA' });
        expect(await store.get('aon')).toBeNull();
        await store.close();
      }
    });

    it('never leaves a transaction open on a pooled connection after a failed acquire', async () => {
      const p = suite.fresh('tx');
      const single = mysql.createPool({ uri: target.url!, connectionLimit: 1, multipleStatements: true });
      try {
        const store = new MysqlStore({ pool: single, prefix: p });
        await store.migrate();
        await single.query(`DROP TABLE ${p}leases`);
        await expect(store.tryLock({ name: 'x', lockAtMostFor: '1s' })).rejects.toMatchObject({
          code: 'SCHEMA',
        });
        const [rows] = await single.query('SELECT @@in_transaction AS t');
        expect(rows).toEqual([{ t: 0 }]);
        await store.close();
      } finally {
        await single.end();
      }
    });

    it('tells keys apart by trailing spaces (PAD SPACE collations would not)', async () => {
      const store = new MysqlStore({ pool: suite.pool, prefix: suite.fresh('pad') });
      await store.migrate();
      for (const k of ['a', 'a ']) await store.put(k, k);
      expect(await store.get('a ')).toBe('a ');
      expect(await store.get('a')).toBe('a');
      const [a, b] = await store.acquire([
        { key: 'a', owner: 'o', leaseMs: 10_000 },
        { key: 'a ', owner: 'o', leaseMs: 10_000 },
      ]);
      expect(a).not.toBeNull();
      expect(b).not.toBeNull();
      await store.close();
    });

    it('uses the UTC clock whatever the session time zone', async () => {
      const single = mysql.createPool({ uri: target.url!, connectionLimit: 1 });
      try {
        const store = new MysqlStore({ pool: single, prefix: suite.fresh('tz') });
        await store.migrate();
        for (const zone of ['+00:00', '+05:00', '-07:00']) {
          await single.query('SET time_zone = ?', [zone]);
          expect(Math.abs((await store.now()) - Date.now())).toBeLessThan(5_000);
        }
        await store.close();
      } finally {
        await single.end();
      }
    });
  },
);

it.skipIf(target.skip !== undefined)(
  'a write over max_allowed_packet is INVALID_ARGUMENT naming the setting, not an outage to retry (issue 29, finding 5)',
  async () => {
    const store = await openStore(target.url!, { prefix: testPrefix('mybig') });
    try {
      const pool = mysql.createPool(target.url!);
      const [rows] = await pool.query('SELECT @@max_allowed_packet AS max');
      await pool.end();
      const max = Number((rows as { max: number }[])[0]!.max);
      const err = await refused(store.put('big', 'x'.repeat(max + 1024)));
      expect(err).toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('max_allowed_packet'),
      });
      // The store still works afterwards.
      await store.put('small', 'ok');
      expect(await store.get('small')).toBe('ok');
    } finally {
      await store.close();
    }
  },
  60_000,
);
