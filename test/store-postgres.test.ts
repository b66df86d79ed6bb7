import pg from 'pg';
import { expect, it } from 'vitest';
import { OncelyError, openStore } from '../src/index.js';
import { PostgresStore } from '../src/store/postgres.js';
import { describeStore } from '../src/testing/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { describeSqlServerSpecifics } from './harness/sql-server-specifics.js';

const target = serverBackend('postgres');
const prefix = testPrefix('pg');

describeStore('postgres', () => openStore(target.url!, { prefix }), { skip: target.skip });

describeSqlServerSpecifics<pg.Pool>(
  {
    name: 'postgres',
    target,
    prefix,
    tag: 'pg',
    openPool(url) {
      const pool = new pg.Pool({ connectionString: url, max: 4 });
      return { pool, rows: async (sql) => (await pool.query(sql)).rows, end: () => pool.end() };
    },
    newStore: (p, on) =>
      typeof on === 'string'
        ? new PostgresStore({ connectionString: on, prefix: p })
        : new PostgresStore({ pool: on, prefix: p }),
    dropSchema: (p) => [
      ...['leases', 'records', 'meta'].map((table) => `DROP TABLE IF EXISTS ${p}${table}`),
      `DROP SEQUENCE IF EXISTS ${p}fence`,
    ],
    quotedKey: '"key"',
    unreachableUrl: 'postgres://u:hunter2-secret@10.255.255.1:5432/db',
    // Where pg_hba.conf trusts the URL's user, a wrong password alone is not refused.
    unknownUser: 'oncely_no_such_user',
  },
  (suite) => {
    it('works without prepared statements', async () => {
      const store = new PostgresStore({
        pool: suite.pool,
        prefix: suite.fresh('np'),
        preparedStatements: false,
      });
      await store.migrate();
      const [a, b] = await store.acquire([
        { key: 'x', owner: 'o', leaseMs: 10_000 },
        { key: 'y', owner: 'o', leaseMs: 10_000 },
      ]);
      expect(b!.token).toBeGreaterThan(0);
      expect(await store.extend('x', a!.token, 20_000)).toBeGreaterThan(a!.expiresAt);
      await store.close();
    });

    it('rejects a bad prefix and unknown options with INVALID_ARGUMENT', () => {
      expect(() => new PostgresStore({ pool: suite.pool, prefix: 'bad-prefix' })).toThrow(OncelyError);
      expect(() => new PostgresStore({ pool: suite.pool, nope: 1 } as never)).toThrow(
        /unknown PostgresStore option/,
      );
      expect(() => new PostgresStore({})).toThrow(/exactly one/);
    });
  },
);
