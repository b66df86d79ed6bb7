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
      `acquired_at bigint NOT NULL, expires_at bigint NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS ${t.leases}_expires_at ON ${t.leases} (expires_at)`,
    `CREATE TABLE IF NOT EXISTS ${t.records} (` +
      `"key" text COLLATE "C" PRIMARY KEY, value text NOT NULL, expires_at bigint)`,
    `CREATE INDEX IF NOT EXISTS ${t.records}_expires_at ON ${t.records} (expires_at)`,
    `CREATE SEQUENCE IF NOT EXISTS ${t.fence} AS bigint MINVALUE 1 CACHE 1`,
    `INSERT INTO ${t.meta} (name, value) VALUES ('schema_version', '${SCHEMA_VERSION}') ON CONFLICT (name) DO NOTHING`,
  ].join(';\n');
}
