import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { FLOOR_TABLE, type Floor, LEASE_MS } from './types.js';

export interface SqliteFloorOptions {
  /** Database file (the floor creates its own table in it). */
  file: string;
  /** PRAGMAs applied on open, e.g. `['journal_mode = WAL', 'synchronous = NORMAL']`. */
  pragmas: readonly string[];
}

/** A lease lock through better-sqlite3: one upsert conditional on expiry, one conditional delete. */
export function sqliteFloor(options: SqliteFloorOptions): Floor {
  const db = new Database(options.file);
  for (const pragma of options.pragmas) db.pragma(pragma);
  db.exec(`DROP TABLE IF EXISTS ${FLOOR_TABLE}`);
  db.exec(
    `CREATE TABLE ${FLOOR_TABLE} (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at INTEGER NOT NULL)`,
  );
  const acquire = db.prepare<[string, string, number, number], { key: string }>(
    `INSERT INTO ${FLOOR_TABLE} (key, owner, expires_at) VALUES (?, ?, ?)
     ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
     WHERE ${FLOOR_TABLE}.expires_at <= ?
     RETURNING key`,
  );
  const release = db.prepare<[string, string]>(`DELETE FROM ${FLOOR_TABLE} WHERE key = ? AND owner = ?`);
  const select1 = db.prepare<[], { one: number }>('SELECT 1 AS one');
  const version = db.prepare<[], { v: string }>('SELECT sqlite_version() AS v').get()?.v ?? '?';
  return {
    version: `SQLite ${version}`,
    async lock(name) {
      const owner = randomUUID();
      const now = Date.now();
      if (!acquire.get(name, owner, now + LEASE_MS, now)) return false;
      if (release.run(name, owner).changes !== 1)
        throw new Error(`sqlite floor: lost ${name} before release`);
      return true;
    },
    async roundTrip() {
      select1.get();
    },
    async close() {
      db.exec(`DROP TABLE IF EXISTS ${FLOOR_TABLE}`);
      db.close();
    },
  };
}
