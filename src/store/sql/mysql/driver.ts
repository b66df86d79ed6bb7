import type { SqlValue } from '../dialect.js';
import { mysqlInline } from './literal.js';

/** What oncely needs from a `mysql2/promise` connection. */
export interface MysqlConnectionLike {
  /** Runs one query (or several statements, with `multipleStatements`): `[result, fields]`. */
  query(sql: string, values?: unknown): Promise<[unknown, unknown]>;
  /** Gives the connection back to its pool. */
  release(): void;
  /** Closes the connection instead of returning it (after a failure that may have left it unusable). */
  destroy?(): void;
}

/**
 * What oncely needs from a `mysql2/promise` pool (`mysql.createPool(…)` fits). Created with
 * `multipleStatements: true`, `acquire`, `apply` and `sweep` take one round trip; without it they send the
 * same statements one by one on one connection.
 */
export interface MysqlPoolLike {
  /** Runs one query on any connection of the pool: `[result, fields]`. */
  query(sql: string, values?: unknown): Promise<[unknown, unknown]>;
  /** Server-side prepared statements (cached per connection by mysql2); used when present. */
  execute?(sql: string, values?: unknown): Promise<[unknown, unknown]>;
  /** Takes a connection for a transaction; oncely releases it afterwards. */
  getConnection(): Promise<MysqlConnectionLike>;
  /** Ends the pool: called only on a pool oncely created itself. */
  end?(): Promise<void>;
}

/** mysql2's callback pool (what a `mysql2/promise` pool wraps), as far as oncely calls it. */
interface MysqlCorePool {
  execute(
    sql: string,
    values: unknown,
    cb: (err: Error | null, result?: unknown, fields?: unknown) => void,
  ): unknown;
  /** Only mysql2's callback pool has it (it makes the promise wrapper): how it is told apart. */
  promise(): unknown;
}

/**
 * A prepared-statement call that goes around mysql2's promise wrapper when `pool` is a
 * `mysql2/promise` pool: its callback pool is the wrapper's `pool` property (public in mysql2's
 * typings), and `execute` on it is the same call — same connection choice, same statement cache,
 * same error objects. The wrapper makes a `new Error()` on every call (for the stack of a failure),
 * and capturing that stack through oncely's async frames cost ~4–6 µs per statement, a tenth of a
 * lock cycle's node CPU at concurrency 32. `undefined` for any other pool, and for one whose
 * `execute` was replaced ({@link isPromisePool}); openStore's BoundedMysqlPool is built on the
 * callback API itself.
 */
export function coreExecute(
  pool: MysqlPoolLike,
): ((sql: string, values: unknown) => Promise<[unknown, unknown]>) | undefined {
  if (!isPromisePool(pool)) return undefined;
  const core = (pool as { pool?: Partial<MysqlCorePool> }).pool;
  if (!core || typeof core.execute !== 'function' || typeof core.promise !== 'function') return undefined;
  const call = core as MysqlCorePool;
  return (sql, values) =>
    new Promise((resolve, reject) => {
      call.execute(sql, values, (err, result, fields) => {
        if (err) reject(err);
        else resolve([result, fields]);
      });
    });
}

/**
 * Whether `pool` is a `mysql2/promise` pool as mysql2 makes it: its `execute` is PromisePool's
 * own, not one the caller put on the object or on a subclass (a logging or tracing wrapper must
 * keep seeing every statement, so such a pool is called through its `execute`).
 */
function isPromisePool(pool: MysqlPoolLike): boolean {
  if (Object.hasOwn(pool, 'execute')) return false;
  const proto = Object.getPrototypeOf(pool) as { constructor?: { name?: string } } | null;
  return proto !== null && proto.constructor?.name === 'PromisePool' && Object.hasOwn(proto, 'execute');
}

/** The OK packet of an INSERT/UPDATE/DELETE. */
export interface MysqlHeader {
  affectedRows: number;
  insertId: number;
}

/** One statement of a script: its text with `?` placeholders and its values (inlined by runScript). */
export interface ScriptPart {
  sql: string;
  values: readonly SqlValue[];
}

/**
 * Runs `parts` on one pooled connection and returns each statement's result. With `batched`, the
 * statements travel as one multi-statement query (one round trip); otherwise one by one. Either
 * way as text with the values inlined as literals no `sql_mode` can reinterpret (literal.ts); no
 * values array ever reaches `query()`, whose client-side escaping trusts backslashes. With
 * `transaction`, they run between START TRANSACTION and COMMIT, and any error rolls the
 * transaction back before the connection returns to the pool (a connection that cannot even do
 * that is destroyed): no half-done transaction ever goes back to the pool holding row locks.
 */
export async function runScript(
  pool: MysqlPoolLike,
  parts: readonly ScriptPart[],
  options: { batched: boolean; transaction: boolean },
): Promise<unknown[]> {
  const texts = parts.map((p) => mysqlInline(p.sql, p.values));
  const conn = await pool.getConnection();
  let healthy = true;
  try {
    if (options.batched) {
      const sql = options.transaction
        ? ['START TRANSACTION', ...texts, 'COMMIT'].join(';\n')
        : texts.join(';\n');
      // An empty values array: mysql2 then formats nothing (not even named placeholders).
      const [results] = await conn.query(sql, []);
      const list = parts.length === 1 && !options.transaction ? [results] : (results as unknown[]);
      return options.transaction ? list.slice(1, -1) : list;
    }
    if (options.transaction) await conn.query('START TRANSACTION');
    const results: unknown[] = [];
    for (const text of texts) results.push((await conn.query(text, []))[0]);
    if (options.transaction) await conn.query('COMMIT');
    return results;
  } catch (err) {
    if (options.transaction) {
      try {
        await conn.query('ROLLBACK');
      } catch {
        healthy = false;
      }
    }
    throw err;
  } finally {
    if (healthy) conn.release();
    else if (conn.destroy) conn.destroy();
    else conn.release();
  }
}

/**
 * Whether connections of `pool` accept several statements in one query (`multipleStatements`).
 * One probe per store; a parse error means no.
 */
export async function acceptsMultipleStatements(pool: MysqlPoolLike): Promise<boolean> {
  try {
    const [results] = await pool.query('SELECT 1 AS a; SELECT 2 AS b');
    return Array.isArray(results) && results.length === 2 && Array.isArray(results[0]);
  } catch (err) {
    if ((err as { errno?: unknown }).errno === 1064) return false;
    throw err;
  }
}

/**
 * Whether the server is MariaDB 10.5+, whose `INSERT … RETURNING` the one-key re-grant needs
 * (MySQL 8 has no RETURNING). One probe per store.
 */
export async function acceptsReturning(pool: MysqlPoolLike): Promise<boolean> {
  const [rows] = await pool.query('SELECT VERSION() AS v');
  const version = String((rows as { v?: unknown }[])[0]?.v ?? '');
  const match = /^(\d+)\.(\d+)/.exec(version);
  if (!match || !/mariadb/i.test(version)) return false;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major > 10 || (major === 10 && minor >= 5);
}
