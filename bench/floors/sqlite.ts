import Database from 'better-sqlite3';
import { type Floor, LEASE_MS } from './types.js';

export interface SqliteFloorOptions {
  /** Database file (the floor creates its own tables in it). */
  file: string;
  /** Table name of this floor (its counter is `<table>_fence`). */
  table: string;
  /** PRAGMAs applied on open, e.g. `['journal_mode = WAL', 'synchronous = NORMAL']`. */
  pragmas: readonly string[];
}

/** SQLite's own clock in epoch ms (as the store uses it; `unixepoch('subsec')` needs 3.42+). */
const NOW = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";

/**
 * A lease lock through better-sqlite3, as you would write it by hand with oncely's semantics: one
 * prepared upsert that takes the name if it is free or expired on SQLite's clock, with a token one
 * above a one-row counter that an AFTER INSERT / AFTER UPDATE OF token trigger raises in the same
 * statement (SQLite has no sequences; one write statement holds the database's write lock, so
 * the draw and the grant are one atomic step), then one prepared conditional UPDATE that ends the
 * lease (row kept).
 */
export function sqliteFloor({ file, table, pragmas }: SqliteFloorOptions): Floor {
  const fence = `${table}_fence`;
  const db = new Database(file);
  for (const pragma of pragmas) db.pragma(pragma);
  const drop = () =>
    db.exec(
      `DROP TRIGGER IF EXISTS ${table}_on_insert; DROP TRIGGER IF EXISTS ${table}_on_update; ` +
        `DROP TABLE IF EXISTS ${table}; DROP TABLE IF EXISTS ${fence}`,
    );
  drop();
  const raise = `BEGIN UPDATE ${fence} SET value = NEW.token WHERE id = 1; END`;
  db.exec(
    `CREATE TABLE ${table} (key TEXT PRIMARY KEY, owner TEXT NOT NULL, token INTEGER NOT NULL, expires_at INTEGER NOT NULL);
     CREATE TABLE ${fence} (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
     INSERT INTO ${fence} (id, value) VALUES (1, 0);
     CREATE TRIGGER ${table}_on_insert AFTER INSERT ON ${table} ${raise};
     CREATE TRIGGER ${table}_on_update AFTER UPDATE OF token ON ${table} ${raise};`,
  );
  const acquire = db.prepare<[string, string, number], { token: number }>(
    `INSERT INTO ${table} (key, owner, token, expires_at)
     VALUES (?, ?, (SELECT value + 1 FROM ${fence} WHERE id = 1), ${NOW} + ?)
     ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, token = excluded.token, expires_at = excluded.expires_at
     WHERE ${table}.expires_at <= ${NOW}
     RETURNING token`,
  );
  const release = db.prepare<[string, number]>(
    `UPDATE ${table} SET expires_at = ${NOW} WHERE key = ? AND token = ? AND expires_at > ${NOW}`,
  );
  const select1 = db.prepare<[], { one: number }>('SELECT 1 AS one');
  const version = db.prepare<[], { v: string }>('SELECT sqlite_version() AS v').get()?.v ?? '?';
  return {
    version: `SQLite ${version}`,
    async lock(name) {
      const got = acquire.get(name, 'bench-floor', LEASE_MS);
      if (!got) return false;
      if (release.run(name, got.token).changes !== 1)
        throw new Error(`sqlite floor: lost ${name} before release`);
      return true;
    },
    async roundTrip() {
      select1.get();
    },
    async close() {
      drop();
      db.close();
    },
  };
}
