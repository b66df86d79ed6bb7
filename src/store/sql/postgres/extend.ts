import type { Run, Statement } from '../dialect.js';
import { toInt } from '../rows.js';
import type { Tables } from '../tables.js';
import { PG_NOW_CTE } from './clock.js';

/**
 * extend (PostgreSQL): one UPDATE … RETURNING.
 *
 * Takes: key, token, leaseMs. Returns: the new expires_at = greatest(expires_at, now + leaseMs) —
 * an extend never shortens a lease, so a late one cannot cut a release's hold short (see
 * Store.extend) — or no row when the token does not hold an unexpired lease on the key.
 *
 * Why it is atomic in one round trip: a single statement; the UPDATE locks the row and re-checks
 * token and expiry against its newest version, so it can never extend a lease that was taken over
 * or that expired before the statement's clock instant (read once, in the CTE).
 */
export function pgExtend(
  t: Tables,
  run: Run,
): (key: string, token: number, leaseMs: number) => Promise<number | null> {
  const statement: Statement = {
    name: `${t.prefix}extend`,
    text:
      `${PG_NOW_CTE} UPDATE ${t.leases} AS l SET expires_at = GREATEST(l.expires_at, c.now + $3::bigint) FROM c ` +
      `WHERE l."key" = $1 AND l.token = $2::bigint AND l.expires_at > c.now RETURNING l.expires_at`,
  };
  return async (key, token, leaseMs) => {
    const [row] = (await run(statement, [key, token, leaseMs])).rows;
    return row ? toInt(row['expires_at']) : null;
  };
}
