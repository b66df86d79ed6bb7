import type { Run, Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { PG_NOW } from './clock.js';

/**
 * put (PostgreSQL): one INSERT … ON CONFLICT DO UPDATE.
 *
 * Takes: key, value, ttlMs (NULL = never expires; now + NULL is NULL). Returns nothing.
 *
 * Why it is atomic in one round trip: a single upsert statement; concurrent puts on one key
 * serialise on the row and the last one wins, as with every other backend.
 */
export function pgPutStatement(t: Tables): Statement {
  return {
    name: `${t.prefix}put`,
    text:
      `INSERT INTO ${t.records} AS r ("key", value, expires_at) VALUES ($1, $2, ${PG_NOW} + $3::bigint) ` +
      `ON CONFLICT ("key") DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`,
  };
}

export function pgPut(
  t: Tables,
  run: Run,
): (key: string, value: string, ttlMs: number | null) => Promise<void> {
  const statement = pgPutStatement(t);
  return async (key, value, ttlMs) => {
    await run(statement, [key, value, ttlMs]);
  };
}
