import type { Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { SQLITE_NOW } from './clock.js';

/**
 * put (SQLite): one INSERT … ON CONFLICT DO UPDATE.
 *
 * Takes: key, value, ttlMs (NULL = never expires; now + NULL is NULL). Returns nothing.
 *
 * Why it is atomic: a single autocommit upsert; the last writer wins.
 */
export function sqlitePut(t: Tables): Statement {
  return {
    name: 'put',
    text:
      `INSERT INTO ${t.records} ("key", value, expires_at) VALUES (?, ?, ${SQLITE_NOW} + ?) ` +
      'ON CONFLICT ("key") DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at',
  };
}
