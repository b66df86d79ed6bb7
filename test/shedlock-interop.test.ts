/**
 * ShedLock table interop: oncely's `tryLock`/`withLock` on a store opened with `shedlockTable`
 * and a "Java service" on ShedLock's JDBC provider (test/harness/shedlock-java.ts: the SQL
 * ShedLock sends, through the raw driver) share one table on a real PostgreSQL and MariaDB, in
 * both of ShedLock's time modes.
 */
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Lock, OncelyError, openStore, type Store, withLock } from '../src/index.js';
import { MysqlStore } from '../src/store/mysql.js';
import { PostgresStore } from '../src/store/postgres.js';
import { type BackendTarget, serverBackend, testPrefix } from './harness/backends.js';
import { type JavaMode, JavaShedLock } from './harness/shedlock-java.js';

const MODES: JavaMode[] = ['db-time', 'client-clock'];

interface Engine {
  name: 'postgres' | 'mysql';
  target: BackendTarget;
  /** A raw pool, as the Java side and the checks use it. */
  rawPool(url: string): pg.Pool | mysql.Pool;
  /** Rows of `sql` (`?` placeholders) on the raw pool. */
  rows(pool: pg.Pool | mysql.Pool, sql: string, values?: unknown[]): Promise<Record<string, unknown>[]>;
  /** A store on a pool of the caller's (the second way in besides `openStore`). */
  ownStore(url: string, prefix: string, shedlockTable: string): Store;
  /** `column` (a UTC timestamp) as epoch ms, in SQL. */
  ms(column: string): string;
  /** Statements creating `table` in a layout oncely must refuse (time columns with a zone / no key). */
  badTable(table: string): string;
}

const ENGINES: Engine[] = [
  {
    name: 'postgres',
    target: serverBackend('postgres'),
    // The "JVM" talks in another session time zone than oncely (below): neither may matter.
    rawPool: (url) => new pg.Pool({ connectionString: url, max: 12, options: '-c TimeZone=Asia/Tokyo' }),
    async rows(pool, sql, values = []) {
      let n = 0;
      return (
        await (pool as pg.Pool).query(
          sql.replace(/\?/g, () => `$${++n}`),
          values,
        )
      ).rows;
    },
    ownStore: (url, prefix, shedlockTable) =>
      new PostgresStore({
        pool: new pg.Pool({ connectionString: url, max: 6, options: '-c TimeZone=America/New_York' }),
        prefix,
        shedlockTable,
      }),
    ms: (column) => `(extract(epoch FROM ${column}) * 1000)::bigint`,
    badTable: (table) =>
      `CREATE TABLE ${table} (name VARCHAR(64) PRIMARY KEY, lock_until TIMESTAMPTZ NOT NULL, locked_at TIMESTAMPTZ NOT NULL, locked_by VARCHAR(255) NOT NULL)`,
  },
  {
    name: 'mysql',
    target: serverBackend('mysql'),
    rawPool: (url) => mysql.createPool({ uri: url, connectionLimit: 12 }),
    async rows(pool, sql, values = []) {
      return (await (pool as mysql.Pool).query(sql, values))[0] as Record<string, unknown>[];
    },
    // A caller's pool without multipleStatements: the acquire script goes statement by statement.
    ownStore: (url, prefix, shedlockTable) =>
      new MysqlStore({ pool: mysql.createPool({ uri: url, connectionLimit: 6 }), prefix, shedlockTable }),
    ms: (column) => `(TIMESTAMPDIFF(MICROSECOND, TIMESTAMP '1970-01-01 00:00:00', ${column}) DIV 1000)`,
    badTable: (table) =>
      `CREATE TABLE ${table} (name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NULL, locked_at TIMESTAMP(3) NULL, locked_by VARCHAR(255) NOT NULL)`,
  },
];

/** Polls `attempt` every 20 ms until it returns something, at most `withinMs`. */
async function eventually<T>(attempt: () => Promise<T | null | false>, withinMs: number): Promise<T> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const got = await attempt();
    if (got !== null && got !== false) return got;
    if (performance.now() > deadline) throw new Error(`nothing within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

let counter = 0;
/** A lock name no other test uses. */
function fresh(label: string): string {
  return `${label}-${++counter}-${randomBytes(3).toString('hex')}`;
}

for (const engine of ENGINES) {
  describe.skipIf(engine.target.skip !== undefined)(`ShedLock table interop (${engine.name})`, () => {
    const url = engine.target.url!;
    const prefix = testPrefix(`shl${engine.name.slice(0, 2)}`);
    const table = `shl_${randomBytes(4).toString('hex')}`;
    const cleanup: string[] = [];
    let raw: pg.Pool | mysql.Pool;
    /** Two oncely "instances" on the table: one from openStore, one on a pool of the caller's. */
    let store: Store;
    let other: Store;
    const java = (mode: JavaMode, lockedBy = `java-${mode}`, skewMs = 0) =>
      new JavaShedLock(raw, { engine: engine.name, table, mode, lockedBy, skewMs });
    const row = async (name: string) => {
      const [r] = await engine.rows(
        raw,
        `SELECT ${engine.ms('lock_until')} AS lock_until, ${engine.ms('locked_at')} AS locked_at, locked_by FROM ${table} WHERE name = ?`,
        [name],
      );
      if (!r) throw new Error(`no row for ${name}`);
      return {
        lockUntil: Number(r['lock_until']),
        lockedAt: Number(r['locked_at']),
        lockedBy: String(r['locked_by']),
      };
    };

    beforeAll(async () => {
      raw = engine.rawPool(url);
      store = await openStore(url, { prefix, shedlockTable: table });
      other = engine.ownStore(url, prefix, table);
      await other.migrate();
      cleanup.push(`DROP TABLE IF EXISTS ${table}`);
    });

    afterAll(async () => {
      await store?.close();
      await other?.close();
      for (const sql of cleanup) await engine.rows(raw, sql).catch(() => {});
      for (const t of ['leases', 'records', 'meta'])
        await engine.rows(raw, `DROP TABLE IF EXISTS ${prefix}${t}`);
      await engine.rows(
        raw,
        engine.name === 'postgres'
          ? `DROP SEQUENCE IF EXISTS ${prefix}fence`
          : `DROP TABLE IF EXISTS ${prefix}fence`,
      );
      await raw?.end();
    });

    it("creates the table with ShedLock's DDL and keeps locks there under the bare name, in UTC on the store clock", async () => {
      const schema = engine.name === 'postgres' ? 'current_schema()' : 'DATABASE()';
      const columns = await engine.rows(
        raw,
        `SELECT column_name AS c, data_type AS t FROM information_schema.columns WHERE table_schema = ${schema} AND table_name = ? ORDER BY ordinal_position`,
        [table],
      );
      const types = columns.map((c) => `${String(c['c'])} ${String(c['t']).toLowerCase()}`);
      expect(types).toEqual(
        engine.name === 'postgres'
          ? [
              'name character varying',
              'lock_until timestamp without time zone',
              'locked_at timestamp without time zone',
              'locked_by character varying',
            ]
          : ['name varchar', 'lock_until timestamp', 'locked_at timestamp', 'locked_by varchar'],
      );
      const name = fresh('report');
      const before = await store.now();
      const lock = (await store.tryLock({ name, lockAtMostFor: '1m', owner: 'node-a' }))!;
      const after = await store.now();
      const r = await row(name);
      expect(r).toEqual({
        lockedAt: lock.lockedAt.getTime(),
        lockUntil: lock.lockedUntil.getTime(),
        lockedBy: 'node-a',
      });
      expect(r.lockedAt).toBeGreaterThanOrEqual(before - 1);
      expect(r.lockedAt).toBeLessThanOrEqual(after);
      expect(r.lockUntil - r.lockedAt).toBe(60_000);
      // Not in oncely's leases: `lock:<name>` is free there.
      expect(await store.inspect(`lock:${name}`)).toBeNull();
      expect(await lock.release()).toBe(true);
    });

    it('accepts an existing ShedLock table and refuses one it cannot share (SCHEMA) or a bad name (INVALID_ARGUMENT)', async () => {
      const existing = `${table}_pre`;
      const bad = `${table}_bad`;
      cleanup.push(`DROP TABLE IF EXISTS ${existing}`, `DROP TABLE IF EXISTS ${bad}`);
      const javaHost = new JavaShedLock(raw, {
        engine: engine.name,
        table: existing,
        mode: 'db-time',
        lockedBy: 'jvm',
      });
      await engine.rows(
        raw,
        engine.name === 'postgres'
          ? `CREATE TABLE ${existing}(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))`
          : `CREATE TABLE ${existing}(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL, locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))`,
      );
      expect(await javaHost.lock('nightly', 60_000)).toBe(true);
      const onExisting = await openStore(url, { prefix, shedlockTable: existing });
      expect(await onExisting.tryLock({ name: 'nightly', lockAtMostFor: '1m' })).toBeNull();
      await onExisting.close();

      await engine.rows(raw, engine.badTable(bad));
      const refused = await openStore(url, { prefix, shedlockTable: bad }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(OncelyError);
      expect((refused as OncelyError).code).toBe('SCHEMA');
      expect((refused as OncelyError).message).toMatch(
        engine.name === 'postgres' ? /not a TIMESTAMP/ : /primary key/,
      );

      for (const name of [
        'shed-lock',
        '1shedlock',
        'a.b.c',
        '',
        'x'.repeat(64),
        'x; DROP TABLE y',
        '"shedlock"',
        5,
      ]) {
        const err = await openStore(url, { prefix, shedlockTable: name as string }).catch((e: unknown) => e);
        expect((err as OncelyError).code, String(name)).toBe('INVALID_ARGUMENT');
        expect((err as OncelyError).message).toContain('shedlockTable');
      }
      const sqlite = await openStore('sqlite::memory:', { shedlockTable: 'shedlock' }).catch(
        (e: unknown) => e,
      );
      expect((sqlite as OncelyError).code).toBe('INVALID_ARGUMENT');
      expect((sqlite as OncelyError).message).toMatch(/PostgreSQL and MySQL/);
    });

    it('takes a schema-qualified name, resolved as ShedLock resolves it unquoted; a missing schema is SCHEMA', async () => {
      const [db] = await engine.rows(
        raw,
        `SELECT ${engine.name === 'postgres' ? 'current_database()' : 'DATABASE()'} AS d`,
      );
      let given: string;
      if (engine.name === 'postgres') {
        const schema = `shl_s_${randomBytes(3).toString('hex')}`;
        cleanup.push(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await engine.rows(raw, `CREATE SCHEMA ${schema}`);
        given = `${schema.toUpperCase()}.ShedLock`; // PostgreSQL folds both to lower case
      } else {
        given = `${String(db!['d'])}.${table}_q`;
        cleanup.push(`DROP TABLE IF EXISTS ${given}`);
      }
      const qualified = await openStore(url, { prefix, shedlockTable: given });
      const jvm = new JavaShedLock(raw, {
        engine: engine.name,
        table: given,
        mode: 'db-time',
        lockedBy: 'jvm',
      });
      expect(await jvm.lock('q', 60_000)).toBe(true);
      expect(await qualified.tryLock({ name: 'q', lockAtMostFor: '1m' })).toBeNull();
      await jvm.unlock('q');
      expect(await qualified.tryLock({ name: 'q', lockAtMostFor: '1m' })).not.toBeNull();
      await qualified.close();
      const missing = await openStore(url, { prefix, shedlockTable: 'no_such_schema_x.shedlock' }).catch(
        (e: unknown) => e,
      );
      expect((missing as OncelyError).code).toBe('SCHEMA');
      expect((missing as OncelyError).message).toContain('no_such_schema_x does not exist');
    });

    it("names are data, compared as the table's collation compares them", async () => {
      const odd = `it's "q" \\ %_\n; DROP TABLE ${table} -- ${counter++}`;
      const lock = (await store.tryLock({ name: odd, lockAtMostFor: '1m' }))!;
      expect(await java('db-time').lock(odd, 60_000)).toBe(false);
      expect((await row(odd)).lockUntil).toBe(lock.lockedUntil.getTime());
      await lock.release();
      // ShedLock's DDL gives MySQL the database's default collation: usually case-insensitive.
      const upper = fresh('CaseName');
      const held = (await store.tryLock({ name: upper, lockAtMostFor: '1m' }))!;
      const lower = await store.tryLock({ name: upper.toLowerCase(), lockAtMostFor: '1m' });
      expect(lower === null).toBe(engine.name === 'mysql');
      await lower?.release();
      await held.release();
    });

    it('names longer than 64 characters are refused with INVALID_ARGUMENT; 64 are fine', async () => {
      const long = 'n'.repeat(65);
      for (const attempt of [
        () => store.tryLock({ name: long, lockAtMostFor: '1m' }),
        () => withLock(store, { name: long, lockAtMostFor: '1m' }, () => 'ran'),
      ]) {
        const err = await attempt().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(OncelyError);
        expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
        expect((err as OncelyError).message).toMatch(/65 characters.*at most 64/);
      }
      const max = `${fresh('m')}-`.padEnd(64, 'x');
      const lock = await store.tryLock({ name: max, lockAtMostFor: '1m' });
      expect(lock).not.toBeNull();
      expect(await java('db-time').lock(max, 60_000)).toBe(false);
      await lock!.release();
    });

    for (const mode of MODES) {
      describe(`with a Java service in ${mode} mode`, () => {
        it("while one side holds a lock the other is refused; Java's unlock of its own lock lets oncely in", async () => {
          const jvm = java(mode);
          const name = fresh('j');
          expect(await jvm.lock(name, 60_000)).toBe(true);
          expect(await store.tryLock({ name, lockAtMostFor: '1m' })).toBeNull();
          expect((await withLock(other, { name, lockAtMostFor: '1m' }, () => 'ran')).ran).toBe(false);
          await jvm.unlock(name);
          const lock = (await store.tryLock({ name, lockAtMostFor: '1m', owner: 'node-a' }))!;
          expect(lock).not.toBeNull();
          expect((await row(name)).lockedBy).toBe('node-a');
          // …and while oncely holds it, Java is refused, also by the other oncely instance.
          expect(await jvm.lock(name, 60_000)).toBe(false);
          expect(await java(mode, 'another-jvm').lock(name, 60_000)).toBe(false);
          expect(await other.tryLock({ name, lockAtMostFor: '1m' })).toBeNull();
          expect(await lock.release()).toBe(true);
          expect(await jvm.lock(name, 60_000)).toBe(true);
        });

        it('after lock_until passes the other side gets the lock, not before', async () => {
          const jvm = java(mode);
          const name = fresh('e');
          expect(await jvm.lock(name, 300)).toBe(true);
          const javaUntil = (await row(name)).lockUntil;
          expect(await store.tryLock({ name, lockAtMostFor: '1m' })).toBeNull();
          const lock = await eventually(() => store.tryLock({ name, lockAtMostFor: 300 }), 5_000);
          // oncely writes whole ms (truncated) and ShedLock's usingDbTime() on PostgreSQL microseconds.
          expect(lock.lockedAt.getTime()).toBeGreaterThanOrEqual(javaUntil - 1);
          // oncely's lock is never released: Java gets it once its lock_until has passed.
          expect(await jvm.lock(name, 60_000)).toBe(false);
          await eventually(() => jvm.lock(name, 60_000), 5_000);
          if (mode === 'db-time')
            expect((await row(name)).lockedAt).toBeGreaterThanOrEqual(lock.lockedUntil.getTime());
          expect(await lock.release()).toBe(false); // expired and taken: its release touches nothing
          expect((await row(name)).lockedBy).toBe(`java-${mode}`);
        });

        it('lockAtLeastFor: oncely keeps lock_until = locked_at + lockAtLeastFor on release, as ShedLock does', async () => {
          const jvm = java(mode);
          const name = fresh('l');
          const lock = (await store.tryLock({ name, lockAtMostFor: '10s', lockAtLeastFor: 400 }))!;
          expect(await lock.release()).toBe(true);
          const r = await row(name);
          expect(r.lockUntil).toBe(lock.lockedAt.getTime() + 400);
          expect(await jvm.lock(name, 60_000)).toBe(false);
          await eventually(() => jvm.lock(name, 60_000), 5_000);
          // The other way round: Java's unlock keeps it for its lockAtLeastFor, and oncely honours that.
          await jvm.unlock(name, 400);
          const held = await row(name);
          expect(held.lockUntil - held.lockedAt).toBeGreaterThanOrEqual(400);
          expect(await store.tryLock({ name, lockAtMostFor: '1m' })).toBeNull();
          const next = await eventually(() => store.tryLock({ name, lockAtMostFor: '1m' }), 5_000);
          expect(next.lockedAt.getTime()).toBeGreaterThanOrEqual(held.lockUntil - 1); // ms vs µs, as above
          await next.release();
        });

        it('a race of 8 oncely and 8 Java acquirers at once yields exactly one holder', async () => {
          const jvms = Array.from({ length: 8 }, (_, i) => java(mode, `jvm-${i}`));
          for (let round = 0; round < 4; round++) {
            const name = fresh('race');
            const outcomes = await Promise.all([
              ...Array.from({ length: 8 }, (_, i) =>
                (i % 2 ? other : store)
                  .tryLock({ name, lockAtMostFor: '1m', owner: `node-${i}` })
                  .then((lock) => (lock ? `node-${i}` : null)),
              ),
              ...jvms.map((jvm, i) => jvm.lock(name, 60_000).then((ok) => (ok ? `jvm-${i}` : null))),
            ]);
            const winners = outcomes.filter((o) => o !== null);
            expect(winners, `round ${round}`).toHaveLength(1);
            expect((await row(name)).lockedBy).toBe(winners[0]);
          }
        });
      });
    }

    it('fencing tokens strictly increase across oncely grants of a name, whoever held it in between', async () => {
      const jvm = java('db-time');
      const name = fresh('t');
      const tokens: number[] = [];
      for (let i = 0; i < 4; i++) {
        const lock = (await (i % 2 ? other : store).tryLock({ name, lockAtMostFor: '1m' }))!;
        tokens.push(lock.token);
        await lock.release();
        expect(await jvm.lock(name, 60_000)).toBe(true);
        await jvm.unlock(name);
      }
      expect(
        tokens.every((t, i) => Number.isSafeInteger(t) && t > 0 && (i === 0 || t > tokens[i - 1]!)),
      ).toBe(true);
    });

    it('a holder whose lock ran out cannot extend or release the next grant, even under the same owner', async () => {
      const name = fresh('s');
      const stale = (await store.tryLock({ name, lockAtMostFor: 150, owner: 'svc' }))!;
      const next = await eventually(() => other.tryLock({ name, lockAtMostFor: '1m', owner: 'svc' }), 5_000);
      const before = await row(name);
      expect(await stale.extend('1m')).toBe(false);
      expect(await stale.release()).toBe(false);
      expect(await row(name)).toEqual(before);
      expect(await store.tryLock({ name, lockAtMostFor: '1m' })).toBeNull();
      expect(await next.extend('2m')).toBe(true);
      expect((await row(name)).lockUntil).toBe(next.lockedUntil.getTime());
      expect(await next.release()).toBe(true);
    });

    it("ShedLock's client-clock unlock does not check the holder: a late Java unlock frees oncely's lock, and oncely notices at its next extend", async () => {
      const name = fresh('u');
      const late = java('client-clock', 'slow-jvm');
      expect(await late.lock(name, 150)).toBe(true);
      const lock = await eventually(() => store.tryLock({ name, lockAtMostFor: '1m' }), 5_000);
      await late.unlock(name); // the Java task finished after its lockAtMostFor
      expect(await java('db-time', 'jvm-2').lock(name, 60_000)).toBe(true);
      expect(await lock.extend('1m')).toBe(false);
      // usingDbTime()'s unlock checks locked_by, so it leaves a lock it does not hold alone.
      const name2 = fresh('u');
      const dbLate = java('db-time', 'slow-jvm');
      expect(await dbLate.lock(name2, 150)).toBe(true);
      const lock2 = await eventually(() => store.tryLock({ name: name2, lockAtMostFor: '1m' }), 5_000);
      await dbLate.unlock(name2);
      expect(await java('db-time', 'jvm-2').lock(name2, 60_000)).toBe(false);
      expect(await lock2.extend('1m')).toBe(true);
      await lock2.release();
    });

    it('a client-clock Java host is only as good as its clock; a usingDbTime one is exact', async () => {
      const name = fresh('c');
      const lock = (await store.tryLock({ name, lockAtMostFor: '2s' }))!;
      expect(await java('db-time').lock(name, 60_000)).toBe(false);
      expect(await java('client-clock', 'jvm-on-time').lock(name, 60_000)).toBe(false);
      // A Java host whose clock runs 5 s ahead believes oncely's lock has ended, and takes it.
      expect(await java('client-clock', 'jvm-ahead', 5_000).lock(name, 60_000)).toBe(true);
      expect(await lock.extend('2s')).toBe(false);
    });

    it('withLock keeps the lock alive in the table while the callback runs', async () => {
      const name = fresh('w');
      const jvm = java('db-time');
      const result = await withLock(store, { name, lockAtMostFor: 300 }, async (lock: Lock, signal) => {
        const first = lock.lockedUntil.getTime();
        await new Promise((resolve) => setTimeout(resolve, 450)); // past the first lease
        const now = await row(name);
        return {
          refused: !(await jvm.lock(name, 60_000)),
          aborted: signal.aborted,
          extended: now.lockUntil > first + 100,
        };
      });
      expect(result).toEqual({ ran: true, value: { refused: true, aborted: false, extended: true } });
      expect(await jvm.lock(name, 60_000)).toBe(true);
    });
  });
}
