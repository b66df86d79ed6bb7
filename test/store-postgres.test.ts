import pg from 'pg';
import { expect, it } from 'vitest';
import { OncelyError, openStore } from '../src/index.js';
import { type PgPoolLike, PostgresStore } from '../src/store/postgres.js';
import { pgArrayLiteral } from '../src/store/sql/postgres/array-literal.js';
import type { WriteOp } from '../src/store/types.js';
import { describeStore } from '../src/testing/index.js';
import { ODD_STRINGS } from '../src/testing/odd-data.js';
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
    downgradeLeases: (p) => [
      `ALTER TABLE ${p}leases DROP COLUMN sweep_at`,
      `CREATE INDEX ${p}leases_expires_at ON ${p}leases (expires_at)`,
    ],
    quotedKey: '"key"',
    unreachableUrl: 'postgres://u:hunter2-secret@10.255.255.1:5432/db',
    // Where pg_hba.conf trusts the URL's user, a wrong password alone is not refused.
    unknownUser: 'oncely_no_such_user',
  },
  (suite) => {
    /** The suite's pool, with the text of every query sent through it pushed onto `texts`. */
    const recording = (texts: string[]): PgPoolLike => ({
      query: (config) => {
        texts.push(config.text);
        return suite.pool.query(config);
      },
    });

    it('migrate() on a current schema takes no table lock (no deadlock next to running writers)', async () => {
      // A writer in the middle of a transaction holds row locks on records (and, in the real
      // deadlock, waits for a leases row): DDL such as CREATE INDEX IF NOT EXISTS would queue behind
      // it for a SHARE lock. migrate() of a complete, current schema must not wait at all.
      const p = suite.fresh('mig');
      const store = new PostgresStore({ pool: suite.pool, prefix: p });
      await store.migrate();
      await store.put('k', 'v');
      const writer = await suite.pool.connect();
      try {
        await writer.query('BEGIN');
        await writer.query(`UPDATE ${p}records SET value = 'w' WHERE "key" = 'k'`);
        const other = new PostgresStore({ connectionString: target.url!, prefix: p });
        const outcome = await Promise.race([
          other.migrate().then(() => 'migrated'),
          new Promise((resolve) => setTimeout(() => resolve('blocked'), 3_000)),
        ]);
        expect(outcome).toBe('migrated');
        await writer.query('ROLLBACK');
        await other.close();
      } finally {
        await writer.query('ROLLBACK').catch(() => {});
        writer.release();
      }
      await store.close();
    });

    it('sweeps a table without statistics in index order, not by reading every row', async () => {
      // A new table (or one grown faster than autovacuum analyses it) has no statistics; with only
      // LIMIT, PostgreSQL planned sweep's searches as sequential scans of both tables — every row
      // read at every sweep of every node, usually to find nothing due.
      const texts: string[] = [];
      const p = suite.fresh('sw');
      const store = new PostgresStore({ pool: recording(texts), prefix: p });
      await store.migrate();
      // Live rows, none due for sweep: 20,000 lease rows, 20,000 records that never expire.
      await suite.pool.query(
        `INSERT INTO ${p}leases SELECT 'k' || g, 'o', g, 0, 9000000000000, 9000000000000 FROM generate_series(1, 20000) g`,
      );
      await suite.pool.query(
        `INSERT INTO ${p}records SELECT 'r' || g, 'v', NULL FROM generate_series(1, 20000) g`,
      );
      texts.length = 0;
      expect(await store.sweep({ limit: 1000 })).toEqual({ leases: 0, records: 0 });
      const sweep = texts.find((t) => t.includes('DELETE'))!;
      expect(sweep).toBeDefined();
      const client = await suite.pool.connect();
      try {
        await client.query(`PREPARE oncely_sweep_plan(int) AS ${sweep}`);
        for (const mode of ['force_custom_plan', 'force_generic_plan']) {
          await client.query(`SET plan_cache_mode = ${mode}`);
          const plan = (await client.query('EXPLAIN EXECUTE oncely_sweep_plan(1000)')).rows
            .map((r: Record<string, string>) => r['QUERY PLAN'])
            .join('\n');
          // Found through the indexes (an ordered or a bitmap index scan), never by reading the tables.
          expect(plan, mode).toMatch(new RegExp(`Index Scan (using|on) ${p}leases_sweep_at`));
          expect(plan, mode).toMatch(new RegExp(`Index Scan (using|on) ${p}records_expires_at`));
          expect(plan, mode).not.toMatch(/Seq Scan/);
        }
      } finally {
        // Only this one: DEALLOCATE ALL would also drop the pooled connection's own prepared
        // statements, which pg still believes are there.
        await client.query('DEALLOCATE oncely_sweep_plan').catch(() => {});
        await client.query('RESET plan_cache_mode').catch(() => {});
        client.release();
      }
      await store.close();
    });

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

    it('applies a batch in one query, with or without repeated keys and prepared statements', async () => {
      for (const preparedStatements of [true, false]) {
        const texts: string[] = [];
        const p = suite.fresh('rt');
        const store = new PostgresStore({ pool: recording(texts), prefix: p, preparedStatements });
        await store.migrate();
        const [occurrence, gate] = await store.acquire([
          { key: 'occ', owner: 'o', leaseMs: 10_000 },
          { key: 'gate', owner: 'o', leaseMs: 10_000 },
        ]);
        await store.put('running', 'r');
        const hold = (await store.now()) + 10_000;
        texts.length = 0;
        expect(
          await store.apply([
            { op: 'put', key: 'history', value: 'done', ttlMs: 60_000 },
            { op: 'delete', key: 'running' },
            { op: 'release', key: 'occ', token: occurrence!.token, holdUntil: hold },
            { op: 'release', key: 'gate', token: gate!.token },
          ]),
        ).toEqual([true, true, true, true]);
        expect(texts).toHaveLength(1);
        // Repeated record keys that collapse to one write per row stay one prepared statement.
        texts.length = 0;
        expect(
          await store.apply([
            { op: 'put', key: 'mark', value: '1' },
            { op: 'put', key: 'mark', value: '2', ttlMs: 60_000 },
            { op: 'delete', key: 'absent' },
            { op: 'delete', key: 'absent' },
            { op: 'put', key: 'brief', value: 'x' },
            { op: 'delete', key: 'brief' },
            { op: 'delete', key: 'history' },
            { op: 'delete', key: 'history' },
          ]),
        ).toEqual([true, true, false, false, true, true, true, false]);
        expect(texts).toHaveLength(1);
        expect(texts[0]).toContain('unnest');
        expect(await store.get('mark')).toBe('2');
        expect(await store.get('brief')).toBeNull();
        expect(await store.get('history')).toBeNull();
        // A lease released twice: the single-op statements in one implicit transaction, values as hex.
        texts.length = 0;
        expect(
          await store.apply([
            { op: 'put', key: "it's", value: "'); DROP TABLE x; -- \\ 🚀" },
            { op: 'release', key: 'occ', token: occurrence!.token },
            { op: 'release', key: 'occ', token: occurrence!.token },
            { op: 'delete', key: "it's" },
            { op: 'put', key: "it's", value: '' },
          ]),
        ).toEqual([true, true, false, true, true]);
        expect(texts).toHaveLength(1);
        expect(texts[0]).not.toContain('unnest');
        expect(texts[0]).not.toContain('DROP');
        expect(await store.get("it's")).toBe('');
        expect(await store.inspect('occ')).toBeNull();
        // A NUL (which PostgreSQL text cannot hold) is refused before anything is sent.
        for (const ops of [
          [
            { op: 'put', key: 'first', value: 'v' },
            { op: 'put', key: 'first', value: 'nul \u0000' },
          ],
          [
            { op: 'put', key: 'first', value: 'v' },
            { op: 'put', key: 'second', value: 'nul \u0000' },
          ],
        ] as WriteOp[][]) {
          await expect(store.apply(ops)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: /NUL/ });
        }
        await expect(store.put('first', 'nul \u0000')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
        expect(await store.get('first')).toBeNull();
        // All or nothing: a statement that fails rolls back the ops before it, in one statement and
        // statement by statement (a lease released twice).
        await suite.pool.query(`DROP TABLE ${p}leases`);
        const release: WriteOp = { op: 'release', key: 'occ', token: occurrence!.token };
        for (const ops of [
          [{ op: 'put', key: 'first', value: 'v' }, release],
          [{ op: 'put', key: 'first', value: 'v' }, release, release],
        ] as WriteOp[][]) {
          await expect(store.apply(ops)).rejects.toMatchObject({ code: 'SCHEMA' });
        }
        expect(await store.get('first')).toBeNull();
        await store.close();
      }
    });

    it('claims a page in one statement; a move whose `to` another writer commits meanwhile is sent again, once', async () => {
      const texts: string[] = [];
      const p = suite.fresh('page');
      const store = new PostgresStore({ pool: recording(texts), prefix: p });
      await store.migrate();
      await store.apply([
        { op: 'put', key: 'due/a', value: 'a' },
        { op: 'put', key: 'due/b', value: 'b' },
      ]);
      texts.length = 0;
      const first = await store.claimPage({ key: 'page/1', owner: 'o', leaseMs: 10_000 }, [
        { op: 'move', from: 'due/a', to: 'next/a', value: 'moved' },
        { op: 'create', key: 'occ/a', value: 'o' },
      ]);
      expect(first.results).toEqual([true, true]);
      expect(texts).toHaveLength(1);
      // `next/b` is absent when the claim's statement starts (so it renames `due/b`), and committed
      // by another writer while the claim waits for it: the unique violation rolls the statement
      // back, and the claim is sent again, deleting `due/b` and overwriting `next/b`.
      const writer = await suite.pool.connect();
      try {
        await writer.query('BEGIN');
        await writer.query(`INSERT INTO ${p}records ("key", value) VALUES ('next/b', 'theirs')`);
        texts.length = 0;
        const claim = store.claimPage({ key: 'page/2', owner: 'o', leaseMs: 10_000 }, [
          { op: 'move', from: 'due/b', to: 'next/b', value: 'mine' },
          { op: 'create', key: 'occ/b', value: 'o' },
        ]);
        for (let waited = 0; waited < 5_000; waited += 20) {
          const { rows } = await suite.pool.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
            [`%${p}records%`],
          );
          if (rows[0].n > 0) break;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        await writer.query('COMMIT');
        const second = await claim;
        expect(second.lease).not.toBeNull();
        expect(second.lease!.token).toBeGreaterThan(first.lease!.token);
        expect(second.results).toEqual([true, true]);
        expect(texts).toHaveLength(2);
      } finally {
        await writer.query('ROLLBACK').catch(() => {});
        writer.release();
      }
      expect(await store.getMany(['due/b', 'next/b', 'occ/b', 'next/a'])).toEqual([
        null,
        'mine',
        'o',
        'moved',
      ]);
      await store.close();
    });

    it('binds array parameters as literals that PostgreSQL reads back element for element', async () => {
      // Array syntax inside elements: braces, commas, quotes, backslashes, the word NULL, empty
      // and blank strings; plus the odd-data strings and numbers with NULLs.
      const texts = ['', ' ', 'NULL', 'null', '{a,b}', '"}', 'a,b', '\\', '\\"', '"', ' x ', ...ODD_STRINGS];
      const { rows } = await suite.pool.query('SELECT $1::text[] AS t, $2::bigint[] AS n', [
        pgArrayLiteral([...texts, null]),
        pgArrayLiteral([1, null, -5, Number.MAX_SAFE_INTEGER]),
      ]);
      expect(rows[0].t).toEqual([...texts, null]);
      expect(rows[0].n).toEqual(['1', null, '-5', String(Number.MAX_SAFE_INTEGER)]);
      expect(pgArrayLiteral([])).toBe('{}');
      // Texts JSON writes with only `\"` and `\\` escapes take the JSON path (the ones above with
      // a control character or a lone surrogate the loop): backslash runs of every parity before
      // a quote, JSON texts holding `\"`, and the word NULL. A backslash before a letter of an
      // escape (`\n`, `\u`) may take either path (the test for the loop is quick, not exact);
      // what matters is that PostgreSQL reads it back as it was.
      const either = ['a\\nb', '\\\\n', '\\\\\\n', '{"a":"b\\"c\\\\d\\u0041\\n"}', '\\t\\b\\f\\r\\u'];
      const plain = [
        '\\"x',
        '\\\\"',
        '{"job":"j","scheduleId":"a \\"b\\"","status":"succeeded"}',
        '\\x\\y\\1\\ \\é',
        'NULL',
        'null',
        '',
        '"',
        '\\',
        'x\\',
        'é ✓ 𝄞',
      ];
      // (Which path wrote it shows in its NULL: `null` from JSON, `NULL` from the loop.)
      expect(pgArrayLiteral([...plain, null]).endsWith(',null}')).toBe(true);
      expect(pgArrayLiteral([...plain, 'line\nbreak', null]).endsWith(',NULL}')).toBe(true);
      const json = await suite.pool.query('SELECT $1::text[] AS t, $2::text[] AS m, $3::text[] AS e', [
        pgArrayLiteral([...plain, null]),
        pgArrayLiteral([...plain, 'line\nbreak', null]),
        pgArrayLiteral([...plain, ...either, null]),
      ]);
      expect(json.rows[0].t).toEqual([...plain, null]);
      expect(json.rows[0].m).toEqual([...plain, 'line\nbreak', null]);
      expect(json.rows[0].e).toEqual([...plain, ...either, null]);
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
