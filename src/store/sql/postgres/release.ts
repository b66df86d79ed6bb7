import type { Run, Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { PG_NOW_CTE } from './clock.js';

/**
 * release (PostgreSQL): one UPDATE.
 *
 * Takes: key, token, holdUntil (store ms; 0 = none). Returns: 1 affected row when the token held an
 * unexpired lease, which now ends at max(now, holdUntil); the row stays for sweep so the key's
 * token history is kept by the row as long as it lives, and by the sequence after.
 *
 * Why it is atomic in one round trip: a single statement that locks the row and re-checks token and
 * expiry on its newest version.
 */
export function pgReleaseStatement(t: Tables): Statement {
  return {
    name: `${t.prefix}release`,
    text:
      `${PG_NOW_CTE} UPDATE ${t.leases} AS l SET expires_at = GREATEST(c.now, $3::bigint) FROM c ` +
      `WHERE l."key" = $1 AND l.token = $2::bigint AND l.expires_at > c.now`,
  };
}

export function pgRelease(
  t: Tables,
  run: Run,
): (key: string, token: number, holdUntil: number) => Promise<boolean> {
  const statement = pgReleaseStatement(t);
  return async (key, token, holdUntil) => (await run(statement, [key, token, holdUntil])).affected > 0;
}
