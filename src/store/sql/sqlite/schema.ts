import type BetterSqlite3 from 'better-sqlite3';
import { SCHEMA_VERSION, schemaTooNew, type Tables } from '../tables.js';

/**
 * The names of the two triggers that advance the fence counter whenever a lease row gets a token
 * (see acquire.ts). Like table names they come from the validated prefix only.
 */
export function fenceTriggers(t: Tables): { insert: string; update: string } {
  return { insert: `${t.leases}_fence_on_insert`, update: `${t.leases}_fence_on_update` };
}

/** The index sweep walks: lease rows by `sweep_at` (see {@link sqliteMigrate}). */
export function sweepIndex(t: Tables): string {
  return `${t.leases}_sweep_at`;
}

/**
 * Creates the schema in one `BEGIN IMMEDIATE` transaction (SQLite DDL is transactional), so any
 * number of processes may migrate at once: they simply take turns. Idempotent, and it upgrades a
 * database made by an older oncely in place: every object is `IF NOT EXISTS`, and a missing
 * column is added.
 *
 * Keys are TEXT with the default BINARY collation: memcmp of UTF-8 = code point order. The fence is
 * one row (id = 1) holding the last token handed out; two AFTER triggers on the leases table raise
 * it to every token a lease row is given, in the same statement (so atomically with the grant).
 * They only ever raise it, which also keeps an older oncely that still sets the counter itself
 * (to the same value) correct while both share a file.
 *
 * Sweep finds lease rows through `sweep_at`, a time by which a row is worth looking at again, not
 * through `expires_at`: every grant and release rewrites `expires_at`, and an index on it would
 * cost each lock cycle two more page writes (the WAL writes whole pages), while `sweep_at` is
 * written when a row is inserted (its first lease's end) and afterwards only by sweep itself.
 * Rows an older oncely inserts get the column's default, 0: due at once. The old `expires_at`
 * index is dropped (an older oncely's migrate may create it again; that costs speed, not
 * correctness).
 */
export function sqliteMigrate(db: BetterSqlite3.Database, t: Tables): void {
  const triggers = fenceTriggers(t);
  const advance = `BEGIN UPDATE ${t.fence} SET value = NEW.token WHERE id = 1 AND value < NEW.token; END`;
  db.transaction(() => {
    db.exec(
      `CREATE TABLE IF NOT EXISTS ${t.meta} (name TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`,
    );
    const row = db.prepare(`SELECT value FROM ${t.meta} WHERE name = 'schema_version'`).get() as
      | { value: string }
      | undefined;
    const found = Number(row?.value ?? 0);
    if (found > SCHEMA_VERSION) throw schemaTooNew('sqlite', found);
    db.exec(
      `CREATE TABLE IF NOT EXISTS ${t.leases} ("key" TEXT NOT NULL PRIMARY KEY, owner TEXT NOT NULL, ` +
        'token INTEGER NOT NULL, acquired_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, ' +
        'sweep_at INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID',
    );
    const columns = db.prepare(`SELECT name FROM pragma_table_info('${t.leases}')`).all() as {
      name: string;
    }[];
    if (!columns.some((c) => c.name === 'sweep_at'))
      db.exec(`ALTER TABLE ${t.leases} ADD COLUMN sweep_at INTEGER NOT NULL DEFAULT 0`);
    db.exec(
      [
        `CREATE INDEX IF NOT EXISTS ${sweepIndex(t)} ON ${t.leases} (sweep_at)`,
        `DROP INDEX IF EXISTS ${t.leases}_expires_at`,
        `CREATE TABLE IF NOT EXISTS ${t.records} ("key" TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL, expires_at INTEGER)`,
        `CREATE INDEX IF NOT EXISTS ${t.records}_expires_at ON ${t.records} (expires_at)`,
        `CREATE TABLE IF NOT EXISTS ${t.fence} (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)`,
        `INSERT OR IGNORE INTO ${t.fence} (id, value) VALUES (1, 0)`,
        `CREATE TRIGGER IF NOT EXISTS ${triggers.insert} AFTER INSERT ON ${t.leases} ${advance}`,
        `CREATE TRIGGER IF NOT EXISTS ${triggers.update} AFTER UPDATE OF token ON ${t.leases} ${advance}`,
        `INSERT OR IGNORE INTO ${t.meta} (name, value) VALUES ('schema_version', '${SCHEMA_VERSION}')`,
      ].join(';\n'),
    );
  }).immediate();
}
