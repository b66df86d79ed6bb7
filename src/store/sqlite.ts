/**
 * `oncely/sqlite`: the SQLite store, for one host (any number of processes on one file). Needs
 * `better-sqlite3`. `openStore('sqlite:./oncely.db')` loads it for you.
 *
 * @module oncely/sqlite
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { invalidArgument, OncelyError } from '../core/errors.js';
import { describe } from '../core/options.js';
import type { BackendOptions } from './backend-options.js';
import { loadDriver } from './driver.js';
import { SqlStore } from './sql/sql-store.js';
import { SqliteDialect } from './sql/sqlite/dialect.js';
import { tableNames } from './sql/tables.js';
import { checkStoreOptions, onlyWith, stringOption } from './store-options.js';

/** What `new SqliteStore(options)` accepts: `path` (the store opens the file) or `database` (yours). */
export interface SqliteStoreOptions {
  /** Database file (created if missing), or `:memory:`. oncely opens it and closes it on `close()`. */
  path?: string;
  /** Your open better-sqlite3 database; oncely never closes it nor changes its PRAGMAs. */
  database?: Database.Database;
  /** Table prefix (default `oncely_`). */
  prefix?: string;
  /** With `path`: how long a write waits for another connection's write lock (default 10 s). */
  busyTimeoutMs?: number;
}

const KNOWN = ['path', 'database', 'prefix', 'busyTimeoutMs'];

/**
 * The SQLite store (better-sqlite3): for one host, shared safely by any number of processes on the
 * same file. Every race-sensitive call is one `BEGIN IMMEDIATE` transaction or one write
 * statement; the store clock is the host clock as SQLite reads it. A file it opens itself is put in
 * WAL mode with `synchronous = NORMAL` (durable across process crashes; a power cut may lose the
 * last transactions, never corrupt the file).
 *
 * @example
 * import { SqliteStore } from 'oncely/sqlite';
 * const store = new SqliteStore({ path: './oncely.db' });
 * await store.migrate();
 * const lock = await store.tryLock({ name: 'nightly', lockAtMostFor: '10m' });
 */
export class SqliteStore extends SqlStore {
  constructor(options: SqliteStoreOptions) {
    checkStoreOptions('SqliteStore', options, KNOWN, ['path', 'database']);
    // busy_timeout is a PRAGMA of a connection; oncely sets it only on a file it opens itself.
    onlyWith(
      'SqliteStore',
      options,
      'busyTimeoutMs',
      'path',
      "on your own database run db.pragma('busy_timeout = …')",
    );
    const { database } = options;
    const path = stringOption(options.path, 'SqliteStore path');
    const tables = tableNames(options.prefix ?? 'oncely_');
    const busyTimeoutMs = options.busyTimeoutMs ?? 10_000;
    if (typeof busyTimeoutMs !== 'number' || !Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
      throw invalidArgument(
        `busyTimeoutMs must be a whole number of milliseconds; got ${describe(busyTimeoutMs)}`,
      );
    }
    let db: Database.Database;
    if (database !== undefined) {
      if (database === null || typeof database.prepare !== 'function')
        throw invalidArgument('SqliteStore database must be a better-sqlite3 Database');
      db = database;
    } else {
      db = openFile(path!, busyTimeoutMs);
    }
    super(new SqliteDialect(db, tables, database === undefined));
  }
}

/**
 * Puts the file in WAL mode. When several processes open a new file at once, the switch needs a
 * moment of exclusive access and SQLite reports SQLITE_BUSY for it without calling the busy
 * handler; so retry (the constructor is synchronous: wait with Atomics.wait) until busyTimeoutMs.
 * A file already in WAL mode (the usual case) is only read, never switched again.
 */
function enableWal(db: Database.Database, busyTimeoutMs: number): void {
  const deadline = performance.now() + busyTimeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      if (String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal')
        db.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      const busy = (err as { code?: string }).code?.startsWith('SQLITE_BUSY') === true;
      if (!busy || performance.now() > deadline) throw err;
      Atomics.wait(pause, 0, 0, 10 + Math.random() * 20);
    }
  }
}

/**
 * A path that cannot name a database file is bad input (`INVALID_ARGUMENT`: the CLI exits 2), not
 * an unavailable store: its directory is missing (oncely creates the file, never directories), or
 * it is a directory itself. Anything else SQLite refuses stays `STORE_UNAVAILABLE`.
 */
function checkPath(path: string): void {
  if (path === ':memory:' || path === '') return;
  const full = resolve(path);
  let isDir = false;
  try {
    isDir = statSync(full).isDirectory();
  } catch {
    let parentIsDir = false;
    try {
      parentIsDir = statSync(dirname(full)).isDirectory();
    } catch {
      // Missing: said below.
    }
    if (!parentIsDir)
      throw invalidArgument(
        `sqlite store: the directory of ${JSON.stringify(path)} (${dirname(full)}) ${existsSync(dirname(full)) ? 'is not a directory' : 'does not exist'}; create it first or fix the path (oncely creates the database file, not its directory)`,
      );
  }
  if (isDir)
    throw invalidArgument(
      `sqlite store: ${JSON.stringify(path)} is a directory; name a database file in it, e.g. sqlite:${join(path, 'oncely.db')}`,
    );
}

function openFile(path: string, busyTimeoutMs: number): Database.Database {
  checkPath(path);
  const Driver = loadDriver<typeof Database>('better-sqlite3', 'sqlite:');
  let db: Database.Database | undefined;
  try {
    db = new Driver(path, { timeout: busyTimeoutMs });
    // busy_timeout first: switching to WAL needs a moment of exclusive access to the file.
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    enableWal(db, busyTimeoutMs);
    db.pragma('synchronous = NORMAL');
    return db;
  } catch (err) {
    db?.close();
    const message = err instanceof Error ? err.message : String(err);
    throw new OncelyError(
      'STORE_UNAVAILABLE',
      `sqlite store: cannot open ${JSON.stringify(path)}: ${message}`,
      { cause: err },
    );
  }
}

/**
 * The file path in a `sqlite:` URL: `sqlite:./file.db`, `sqlite:file.db`, `sqlite:/abs/file.db`,
 * `sqlite:///abs/file.db`, `sqlite::memory:`.
 */
export function sqlitePath(url: string): string {
  const rest = /^sqlite:(.*)$/is.exec(url)?.[1];
  let path = rest;
  if (path?.startsWith('//')) path = path.startsWith('///') ? path.slice(2) : undefined;
  if (!path) {
    throw invalidArgument(
      `sqlite URL ${JSON.stringify(url)} names no file: use sqlite:./file.db, sqlite:/abs/file.db, sqlite:///abs/file.db or sqlite::memory:`,
    );
  }
  return path;
}

/** `openStore('sqlite:…')` entry point. */
export function fromUrl(url: string, options: BackendOptions): SqliteStore {
  return new SqliteStore({
    path: sqlitePath(url),
    prefix: options.prefix,
    ...(options.busyTimeoutMs !== undefined && { busyTimeoutMs: options.busyTimeoutMs }),
  });
}
