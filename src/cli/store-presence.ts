/**
 * Read-only commands (`status`, `history`, `locks`, `nodes`, `schedules`) must never create a
 * store, and must not answer "nothing recorded yet" for a store that is not there: a typo in
 * `--store` or a forgotten `--prefix` would look like an empty cluster.
 *
 * - `sqlite:`: checked before anything opens the file (opening creates it): the file must exist
 *   and hold oncely's tables under the prefix — read with the file opened read-only.
 * - A server store (PostgreSQL, MySQL/MariaDB, Redis, etcd) is opened without migrating: it looks
 *   for its schema (tables, or the marker key) and for other prefixes' (openExistingStore), and a
 *   missing one is refused the same way ({@link requireSchema}).
 * - Then, on every store: one where no record and no lease was ever written under the prefix (a
 *   schema created by a program that never used it) is refused too ({@link requireStoreContent}).
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { OncelyError } from '../core/errors.js';
import { redactUrl } from '../core/redact.js';
import { loadDriver } from '../store/driver.js';
import type { SchemaState } from '../store/schema-state.js';
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

/** Other stores named in a message, at most. */
const SHOWN_PREFIXES = 10;

/** What else the store has: other prefixes found, or (`complete`) that it has none at all. */
function othersText(prefixes: readonly string[], made = 'tables', complete = true): string {
  if (prefixes.length === 0) return complete ? ` (no oncely ${made} at all: oncely run creates them)` : '';
  const shown = prefixes.slice(0, SHOWN_PREFIXES).map((p) => `--prefix ${p}`);
  const more = prefixes.length - shown.length;
  return ` (it has one under ${shown.join(', ')}${more > 0 ? ` and ${more} more` : ''})`;
}

/**
 * `STORE_UNAVAILABLE` (exit 1) when a store opened without migrating found no schema of its own
 * under `prefix`, naming the other prefixes it found; nothing was created. `schema` undefined (a
 * store that was migrated instead): nothing to say.
 */
export function requireSchema(
  schema: SchemaState | undefined,
  url: string,
  prefix: string | undefined,
): void {
  if (schema === undefined || schema.present) return;
  throw new OncelyError(
    'STORE_UNAVAILABLE',
    `${redactUrl(url)} ${emptyText(prefix ?? DEFAULT_PREFIX)}${othersText(schema.others, schema.made, schema.complete)}; ${hint()}`,
  );
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
