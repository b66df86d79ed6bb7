/**
 * MySQL/MariaDB pools whose sessions read SQL differently, as an application's own pool may:
 * `sql_mode` with NO_BACKSLASH_ESCAPES (set for ANSI string literals) makes a backslash an
 * ordinary character, so a client-side `\'` escape ends the string instead and what follows runs.
 * Plus the canary checks the injection tests assert on.
 */
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';

export const NO_BACKSLASH_ESCAPES = "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')";

/** The core (callback) connection mysql2's pool hands to 'connection' listeners. */
interface CoreConnection {
  query(sql: string, callback: (err: Error | null) => void): unknown;
  destroy(): void;
}

/**
 * A pool every connection of which runs {@link NO_BACKSLASH_ESCAPES} first: the pool emits
 * 'connection' before handing a new connection out, and its commands run in order.
 */
export function noBackslashEscapesPool(url: string, options: { multipleStatements: boolean }): mysql.Pool {
  const pool = mysql.createPool({ uri: url, connectionLimit: 4, ...options });
  pool.on('connection', (connection) => {
    const core = connection as unknown as CoreConnection;
    core.query(NO_BACKSLASH_ESCAPES, (err) => {
      if (err) core.destroy(); // the next query on it fails loudly instead of running in the wrong mode
    });
  });
  return pool;
}

/** Whether every connection the pool hands out has NO_BACKSLASH_ESCAPES on. */
export async function hasNoBackslashEscapes(pool: mysql.Pool): Promise<boolean> {
  const [rows] = await pool.query('SELECT @@SESSION.sql_mode AS mode');
  return String((rows as { mode: string }[])[0]?.mode).includes('NO_BACKSLASH_ESCAPES');
}

/** A table name no test creates, for an injected `CREATE TABLE` to leave behind. */
export function canaryName(): string {
  return `oncely_canary_${randomBytes(4).toString('hex')}`;
}

/**
 * Whether table `name` exists in the current database. An exact match, not LIKE: under
 * NO_BACKSLASH_ESCAPES, LIKE has no escape character and `\_` would silently match nothing.
 */
export async function tableExists(pool: mysql.Pool, name: string): Promise<boolean> {
  const [rows] = await pool.execute(
    'SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?',
    [name],
  );
  return Number((rows as { n: unknown }[])[0]?.n) > 0;
}

/**
 * Lock names, keys and values that, sent through a client-side `\'` escape to a
 * NO_BACKSLASH_ESCAPES session, close the string and create table `canary`: shaped for a VALUES
 * row of the lease upsert (5 columns), of the record put (key first or value second), and for a
 * WHERE clause. No control characters, `|` or `%`, so they are valid job names too.
 */
export function injectionPayloads(canary: string): string[] {
  const create = `CREATE TABLE ${canary} (i INT); -- `;
  return [
    `x\\', 0x6f, 0, 0, 0); ${create}`,
    `x\\', 0x6f, 0); ${create}`,
    `x\\', 0); ${create}`,
    `x\\'; ${create}`,
  ];
}
