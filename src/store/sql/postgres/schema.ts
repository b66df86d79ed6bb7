import { SCHEMA_VERSION, type Tables } from '../tables.js';

/** SQLSTATE the migration raises when the stored schema is newer than {@link SCHEMA_VERSION}. */
export const PG_SCHEMA_TOO_NEW = 'OE001';

/**
 * The whole migration as one multi-statement simple query: PostgreSQL runs it as one implicit
 * transaction, so it is all-or-nothing, and `pg_advisory_xact_lock` (held until that transaction
 * ends) serialises concurrent migrations of the same prefix — `CREATE … IF NOT EXISTS` alone can
 * still fail when two sessions create the same table at once. Idempotent.
 *
 * Keys are `text COLLATE "C"`: code point order, as on every other backend, and no LIKE anywhere.
 * The fence is a CACHE 1 sequence: a bigger cache would hand each session its own block of
 * values, and tokens from different sessions would no longer increase in time order.
 *
 * Sweep finds lease rows through `sweep_at` (sweep.ts), not `expires_at`: every grant and release
 * rewrites `expires_at`, and with an index on it none of them could be a HOT update (each would
 * add an entry to both indexes), while `sweep_at` is written when a row is inserted and afterwards
 * only by sweep. A database made by an older oncely gets the column (rows default to 0: due at
 * once) and loses the old index; the DO block adds the column where `ADD COLUMN IF NOT EXISTS`
 * (9.6+) would not.
 */
export function pgMigration(t: Tables): string {
  return [
    `SELECT pg_advisory_xact_lock(hashtext('oncely'), hashtext('${t.prefix}'))`,
    `CREATE TABLE IF NOT EXISTS ${t.meta} (name text PRIMARY KEY, value text NOT NULL)`,
    `DO $$ BEGIN IF (SELECT value::int FROM ${t.meta} WHERE name = 'schema_version') > ${SCHEMA_VERSION} THEN ` +
      `RAISE EXCEPTION USING ERRCODE = '${PG_SCHEMA_TOO_NEW}', MESSAGE = 'oncely schema ${t.prefix}* is newer than version ${SCHEMA_VERSION}'; ` +
      `END IF; END $$`,
    `CREATE TABLE IF NOT EXISTS ${t.leases} (` +
      `"key" text COLLATE "C" PRIMARY KEY, owner text NOT NULL, token bigint NOT NULL, ` +
      `acquired_at bigint NOT NULL, expires_at bigint NOT NULL, sweep_at bigint NOT NULL DEFAULT 0)`,
    `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '${t.leases}'::regclass ` +
      `AND attname = 'sweep_at' AND NOT attisdropped) THEN ` +
      `ALTER TABLE ${t.leases} ADD COLUMN sweep_at bigint NOT NULL DEFAULT 0; END IF; END $$`,
    `CREATE INDEX IF NOT EXISTS ${t.leases}_sweep_at ON ${t.leases} (sweep_at)`,
    `DROP INDEX IF EXISTS ${t.leases}_expires_at`,
    `CREATE TABLE IF NOT EXISTS ${t.records} (` +
      `"key" text COLLATE "C" PRIMARY KEY, value text NOT NULL, expires_at bigint)`,
    `CREATE INDEX IF NOT EXISTS ${t.records}_expires_at ON ${t.records} (expires_at)`,
    `CREATE SEQUENCE IF NOT EXISTS ${t.fence} AS bigint MINVALUE 1 CACHE 1`,
    `INSERT INTO ${t.meta} (name, value) VALUES ('schema_version', '${SCHEMA_VERSION}') ON CONFLICT (name) DO NOTHING`,
  ].join(';\n');
}
