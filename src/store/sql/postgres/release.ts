import type { Run, Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { PG_NOW_CTE } from './clock.js';

/**
 * release (PostgreSQL): one UPDATE.
 *
 * Takes: key, token, holdUntil (store ms; 0 = none). Returns: 1 affected row when the token held an
 * unexpired lease, which now ends at holdUntil if that is later than now, else at once; the row
 * stays for sweep so the key's token history is kept by the row as long as it lives, and by the
 * sequence after.
 *
 * Why it is atomic in one round trip: a single statement that locks the row and re-checks token and
 * expiry on its newest version. "At once" is written as the lease's own `acquired_at`, not `now`:
 * two releases of one token may race, the second waiting for the first's row lock and then
 * re-checking `expires_at > now` with the clock it read before waiting — possibly before the first
 * read its own. Every release of a token is sent after its grant returned, so its clock reading is
 * never below the grant's `acquired_at`, and the re-check fails: exactly one release answers true.
 */
export function pgReleaseStatement(t: Tables): Statement {
  return {
    name: `${t.prefix}release`,
    text:
      `${PG_NOW_CTE} UPDATE ${t.leases} AS l ` +
      `SET expires_at = CASE WHEN $3::bigint > c.now THEN $3::bigint ELSE l.acquired_at END FROM c ` +
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
