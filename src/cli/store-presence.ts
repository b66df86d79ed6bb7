/**
 * Read-only commands (`status`, `history`, `locks`, `nodes`, `schedules`) must never create a
 * store, and must not answer "nothing recorded yet" for a store that is not there: a typo in
 * `--store` or a forgotten `--prefix` would look like an empty cluster.
 *
 * - `sqlite:`: checked before anything opens the file (opening creates it): the file must exist
 *   and hold oncely's tables under the prefix — read with the file opened read-only.
 * - A server store: opening it creates the schema (tables, a marker key), so it is checked after,
 *   through the Store contract: a store where no record and no lease was ever written under the
 *   prefix is refused the same way.
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { OncelyError } from '../core/errors.js';
import { redactUrl } from '../core/redact.js';
import { loadDriver } from '../store/driver.js';
import { sqlitePath } from '../store/sqlite.js';
import type { Store } from '../store/types.js';
import { validatePrefix } from '../store/validate.js';

const DEFAULT_PREFIX = 'oncely_';

interface SqliteReadOnly {
  prepare(sql: string): { all(...params: unknown[]): { name: string }[] };
  close(): void;
}
type SqliteDriver = new (
  path: string,
  options: { readonly: boolean; fileMustExist: boolean },
) => SqliteReadOnly;

/** What to fix when the store named by `url` is not where the flags point. */
function hint(): string {
  const fromEnv = process.env.ONCELY_STORE;
  return `check --store${fromEnv ? ' (or $ONCELY_STORE)' : ''} and --prefix`;
}

/**
 * `STORE_UNAVAILABLE` (exit 1) unless the `sqlite:` file of `url` exists and has oncely's tables
 * under `prefix`; does nothing for other stores (see {@link requireStoreContent}) and in-memory
 * SQLite. Opens the file read-only, so it creates nothing.
 */
export function requireSqliteStore(url: string, prefix: string | undefined): void {
  if (!/^sqlite:/i.test(url)) return;
  const wanted = validatePrefix(prefix ?? DEFAULT_PREFIX);
  const path = sqlitePath(url);
  // In-memory, or a directory that is not there: opening says what is wrong, creating nothing.
  if (path === ':memory:' || !existsSync(dirname(resolve(path)))) return;
  const shown = redactUrl(url);
  if (!existsSync(path)) {
    throw new OncelyError(
      'STORE_UNAVAILABLE',
      `no store at ${shown}: the file ${JSON.stringify(path)} does not exist (oncely run creates it); ${hint()}`,
    );
  }
  const prefixes = storePrefixes(path);
  // Unreadable here (not a database, locked): opening it says what is wrong; the file exists.
  if (prefixes === undefined || prefixes.includes(wanted)) return;
  throw new OncelyError(
    'STORE_UNAVAILABLE',
    `${shown} ${emptyText(wanted)}${othersText(prefixes)}; ${hint()}`,
  );
}

/** The prefixes of the oncely stores in the SQLite file at `path`, read-only; undefined if unreadable. */
function storePrefixes(path: string): string[] | undefined {
  const Driver = loadDriver<SqliteDriver>('better-sqlite3', 'sqlite:');
  let db: SqliteReadOnly | undefined;
  try {
    db = new Driver(path, { readonly: true, fileMustExist: true });
    const open = db;
    return open
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%meta'")
      .all()
      .map((r) => r.name.slice(0, -'meta'.length))
      .filter((p) => p !== '' && tablesOf(open, p));
  } catch {
    return undefined;
  } finally {
    db?.close();
  }
}

/** Whether `db` has every table of a SQL store with prefix `p` (leases, records, meta). */
function tablesOf(db: SqliteReadOnly, p: string): boolean {
  const rows = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?)")
    .all(`${p}leases`, `${p}records`, `${p}meta`);
  return rows.length === 3;
}

function emptyText(prefix: string): string {
  return `has no oncely store under prefix ${JSON.stringify(prefix)}`;
}

function othersText(prefixes: readonly string[]): string {
  if (prefixes.length === 0) return ' (no oncely tables at all: oncely run creates them)';
  return ` (it has one under ${prefixes.map((p) => `--prefix ${p}`).join(', ')})`;
}

/**
 * `STORE_UNAVAILABLE` (exit 1) when `store` holds nothing under its prefix: no record (job,
 * node, run, schedule, pause) and no lease was ever written there, so the flags point elsewhere
 * than the cluster they mean. Two cheap reads (a count and one lease).
 */
export async function requireStoreContent(
  store: Store,
  url: string,
  prefix: string | undefined,
): Promise<void> {
  const [records, leases] = await Promise.all([store.count(''), store.listLeases({ limit: 1 })]);
  if (records > 0 || leases.length > 0) return;
  throw new OncelyError(
    'STORE_UNAVAILABLE',
    `${redactUrl(url)} ${emptyText(prefix ?? DEFAULT_PREFIX)}: no job, node, run or lock was ever recorded there; ${hint()}`,
  );
}
