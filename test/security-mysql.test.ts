/**
 * SQL injection on MySQL/MariaDB through a session whose `sql_mode` has NO_BACKSLASH_ESCAPES: with
 * it, a client-side `\'` escape ends the string, so a lock name, key, value or scan prefix shaped
 * like the payloads below used to run its own `CREATE TABLE`. Every value must reach the server as
 * data (src/store/sql/mysql/literal.ts), through the store and through the dashboard's API.
 */
import type mysql from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import { startDashboard } from '../src/dashboard/server.js';
import { createScheduler } from '../src/index.js';
import { LOCK_KEY_PREFIX } from '../src/lock/validate.js';
import { MysqlStore } from '../src/store/mysql.js';
import { mysqlInline, mysqlLiteral } from '../src/store/sql/mysql/literal.js';
import { ODD_STRINGS } from '../src/testing/odd-data.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import {
  canaryName,
  hasNoBackslashEscapes,
  injectionPayloads,
  noBackslashEscapesPool,
  tableExists,
} from './harness/mysql-modes.js';

const target = serverBackend('mysql');
const pools: mysql.Pool[] = [];
const prefixes: string[] = [];

function open(multipleStatements: boolean): { pool: mysql.Pool; store: MysqlStore } {
  const pool = noBackslashEscapesPool(target.url!, { multipleStatements });
  pools.push(pool);
  const prefix = testPrefix(`sec${multipleStatements ? 'm' : 'p'}`);
  prefixes.push(prefix);
  return { pool, store: new MysqlStore({ pool, prefix }) };
}

/** Runs `work`; whatever it threw, fails first if table `canary` exists (an injected statement ran). */
async function withoutCanary(pool: mysql.Pool, canary: string, work: () => Promise<void>): Promise<void> {
  let failure: unknown;
  try {
    await work();
  } catch (err) {
    failure = err;
  }
  expect(await tableExists(pool, canary), `an injected CREATE TABLE ${canary} ran`).toBe(false);
  if (failure !== undefined) throw failure;
}

afterAll(async () => {
  const [pool] = pools;
  for (const p of prefixes) {
    for (const table of ['leases', 'records', 'fence', 'meta'])
      await pool?.query(`DROP TABLE IF EXISTS ${p}${table}`);
  }
  await Promise.all(pools.map((p) => p.end()));
});

describe('mysql literals', () => {
  it('writes strings as hex of their UTF-8 only, and numbers only as safe integers', () => {
    expect(mysqlLiteral("a'\\")).toBe("_utf8mb4 X'61275c'");
    expect(mysqlLiteral('')).toBe("_utf8mb4 X''");
    for (const s of [...ODD_STRINGS, ...injectionPayloads('t')]) {
      const literal = mysqlLiteral(s);
      expect(literal).toMatch(/^_utf8mb4 X'([0-9a-f]{2})*'$/);
      expect(Buffer.from(literal.slice("_utf8mb4 X'".length, -1), 'hex').toString('utf8')).toBe(s);
    }
    expect(mysqlLiteral(null)).toBe('NULL');
    expect(mysqlLiteral(42)).toBe('42');
    expect(mysqlLiteral(-1)).toBe('(-1)'); // `x - -1`, never `x --1`
    for (const bad of [1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, ['a']]) {
      expect(() => mysqlLiteral(bad as never)).toThrow(/cannot write/);
    }
  });

  it('fills every placeholder in order, and refuses a count mismatch', () => {
    expect(mysqlInline('SELECT ? + ?, ?', [1, -2, 'x'])).toBe("SELECT 1 + (-2), _utf8mb4 X'78'");
    expect(() => mysqlInline('SELECT ?', [])).toThrow(/placeholders/);
    expect(() => mysqlInline('SELECT ?', [1, 2])).toThrow(/placeholders/);
  });
});

describe.skipIf(target.skip)('mysql: values stay data under sql_mode NO_BACKSLASH_ESCAPES', () => {
  for (const multipleStatements of [true, false]) {
    it(`as lock name, key, value, owner, scan prefix and apply op key (multipleStatements: ${multipleStatements})`, async () => {
      const { pool, store } = open(multipleStatements);
      expect(await hasNoBackslashEscapes(pool)).toBe(true);
      await store.migrate();
      const canary = canaryName();
      await withoutCanary(pool, canary, async () => {
        for (const payload of injectionPayloads(canary)) {
          const lock = await store.tryLock({ name: payload, owner: payload, lockAtMostFor: '10s' });
          expect(lock?.name).toBe(payload);
          expect(await store.inspect(LOCK_KEY_PREFIX + payload)).toMatchObject({
            owner: payload,
            token: lock!.token,
          });
          expect(await lock!.extend('20s')).toBe(true);

          const keys = [payload, `${payload}\\`, `\\${payload}`];
          const leases = await store.acquire(keys.map((key) => ({ key, owner: payload, leaseMs: 10_000 })));
          expect(leases.map((l) => l?.key)).toEqual(keys);
          expect((await store.listLeases({ prefix: payload })).map((l) => l.key)).toEqual(keys.slice(0, 2));

          await store.put(payload, payload);
          expect(await store.get(payload)).toBe(payload);
          expect(
            await store.apply([
              { op: 'put', key: keys[1]!, value: payload, ttlMs: 60_000 },
              { op: 'put', key: keys[2]!, value: keys[2]! },
              { op: 'delete', key: `${payload}x` },
              { op: 'release', key: payload, token: leases[0]!.token },
              { op: 'release', key: keys[1]!, token: leases[1]!.token, holdUntil: 1 },
            ]),
          ).toEqual([true, true, false, true, true]);
          const scanned = await store.scan(payload, { limit: 10 });
          expect(scanned.map((r) => [r.key, r.value])).toEqual([
            [payload, payload],
            [keys[1], payload],
          ]);
          expect((await store.scan(payload, { after: payload, reverse: false })).map((r) => r.key)).toEqual([
            keys[1],
          ]);
          expect((await store.scan(payload, { after: keys[1]!, reverse: true })).map((r) => r.key)).toEqual([
            payload,
          ]);
          expect(await store.get(keys[2]!)).toBe(keys[2]);
          expect(await lock!.release()).toBe(true);
          expect(await store.apply([{ op: 'delete', key: payload }])).toEqual([true]);
        }
        await store.sweep();
      });
      await store.close();
    });
  }

  it('keeps keys that differ only by case or trailing spaces apart, in key order', async () => {
    const { store } = open(true);
    await store.migrate();
    const keys = ['Ab', 'ab', 'ab ', 'ab  '];
    const leases = await store.acquire(keys.map((key) => ({ key, owner: 'o', leaseMs: 10_000 })));
    expect(leases.map((l) => l?.key)).toEqual(keys);
    for (const key of keys) await store.put(key, `<${key}>`);
    expect(
      await store.apply(keys.map((key) => ({ op: 'put' as const, key: `${key}/`, value: key }))),
    ).toEqual(keys.map(() => true));
    expect((await store.scan('')).map((r) => [r.key, r.value])).toEqual([
      ['Ab', '<Ab>'],
      ['Ab/', 'Ab'],
      ['ab', '<ab>'],
      ['ab ', '<ab >'],
      ['ab  ', '<ab  >'],
      ['ab  /', 'ab  '],
      ['ab /', 'ab '],
      ['ab/', 'ab'],
    ]);
    expect((await store.scan('ab ')).map((r) => r.key)).toEqual(['ab ', 'ab  ', 'ab  /', 'ab /']);
    expect((await store.listLeases({ prefix: 'ab' })).map((l) => l.key)).toEqual(['ab', 'ab ', 'ab  ']);
    await store.close();
  });

  it('GET /api/history?job=<payload> on the dashboard runs no injected statement', async () => {
    const { pool, store } = open(true);
    await store.migrate();
    const canary = canaryName();
    const job = injectionPayloads(canary).at(-1)!; // closes the scan's WHERE; a valid job name
    const scheduler = createScheduler({ store, node: 'sec-node' });
    scheduler.define(job, {}, async () => 'ran');
    const dashboard = await startDashboard({ store, scheduler, port: 0 });
    try {
      let res: Response | undefined;
      await withoutCanary(pool, canary, async () => {
        res = await fetch(`${dashboard.url}/api/history?job=${encodeURIComponent(job)}`);
      });
      expect(res?.status).toBe(200);
      expect(await res?.json()).toEqual([]);

      // With a run recorded, the same request returns it: the job name came back as data.
      await scheduler.start();
      const succeeded = new Promise<void>((resolve) => {
        scheduler.on('succeeded', (e) => {
          if (e.job === job) resolve();
        });
      });
      await scheduler.trigger(job);
      await succeeded;
      const history = (await (
        await fetch(`${dashboard.url}/api/history?job=${encodeURIComponent(job)}`)
      ).json()) as { job: string; status: string }[];
      expect(history.map((h) => [h.job, h.status])).toEqual([[job, 'succeeded']]);
      expect(await tableExists(pool, canary)).toBe(false);
    } finally {
      await dashboard.close();
      await scheduler.stop();
      await store.close();
    }
  });
});
