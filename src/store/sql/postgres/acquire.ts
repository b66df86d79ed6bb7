import type { LeaseRequest } from '../../types.js';
import type { GrantedRow, Run, Statement } from '../dialect.js';
import type { Tables } from '../tables.js';
import { PG_NOW } from './clock.js';
import { gateBucket, gateSpace } from './gate.js';

/**
 * acquire (PostgreSQL): one INSERT … ON CONFLICT DO UPDATE … RETURNING for the whole batch.
 *
 * Takes: keys, owners and lease lengths (three parallel arrays, or three scalars for a batch of
 * one — the tryLock hot path skips the array encoding), sorted by key so concurrent batches lock
 * rows in the same order. Returns: one row (key, token, acquired_at, expires_at) per key granted;
 * keys still held return nothing.
 *
 * Why it is atomic in one round trip: a single statement. The CTE `c` first takes the keys' sweep
 * gate buckets in share mode (see gate.ts), then reads the clock once. A new key is inserted with
 * `nextval('<prefix>fence')` (a CACHE 1 sequence: store-wide, increasing in draw order, never
 * rolled back, no row lock). An existing row is taken only when its lease has expired at that
 * instant; ON CONFLICT locks the row and, under READ COMMITTED, evaluates the WHERE against its
 * newest committed version, so two acquirers never both win, and the DO UPDATE draws its token
 * only then, holding the row lock: it is bigger than every token written for the key before. The
 * gate covers the one remaining path — a token drawn before a conflicting row appeared and was
 * swept — so tokens grow per key even across sweeps. A new row's `sweep_at` is its lease's end; a
 * granted existing row keeps its own (only sweep moves it, see schema.ts), so the DO UPDATE changes
 * no indexed column and can be a HOT update.
 */
export function pgAcquire(t: Tables, run: Run): (requests: readonly LeaseRequest[]) => Promise<GrantedRow[]> {
  const upsert = `INSERT INTO ${t.leases} AS l ("key", owner, token, acquired_at, expires_at, sweep_at)`;
  const onConflict =
    `ON CONFLICT ("key") DO UPDATE SET owner = EXCLUDED.owner, token = nextval('${t.fence}'), ` +
    `acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at ` +
    `WHERE l.expires_at <= EXCLUDED.acquired_at ` +
    `RETURNING l."key" AS "key", l.token, l.acquired_at, l.expires_at`;
  // The lock call comes first in c's target list, so the clock is read after any wait for a sweep.
  const one: Statement = {
    name: `${t.prefix}acquire1`,
    text:
      `WITH c AS (SELECT pg_advisory_xact_lock_shared(${gateSpace(t)}, ${gateBucket('$1::text')}) AS gate, ` +
      `${PG_NOW} AS now) ${upsert} ` +
      `SELECT $1::text, $2::text, nextval('${t.fence}'), c.now, c.now + $3::bigint, c.now + $3::bigint FROM c ${onConflict}`,
  };
  // unnest yields the arrays' elements in order, so rows are inserted (and locked) in key order.
  const many: Statement = {
    name: `${t.prefix}acquire`,
    text:
      `WITH g AS (SELECT count(*) AS n FROM (SELECT DISTINCT ${gateBucket('k')} AS b FROM unnest($1::text[]) AS k) AS buckets, ` +
      `LATERAL (SELECT pg_advisory_xact_lock_shared(${gateSpace(t)}, buckets.b)) AS locked), ` +
      `c AS (SELECT g.n AS gate, ${PG_NOW} AS now FROM g) ${upsert} ` +
      `SELECT r.k, r.o, nextval('${t.fence}'), c.now, c.now + r.ms, c.now + r.ms ` +
      `FROM c, unnest($1::text[], $2::text[], $3::bigint[]) AS r(k, o, ms) ${onConflict}`,
  };
  return async (requests) => {
    const [only] = requests;
    const { rows } =
      requests.length === 1 && only
        ? await run(one, [only.key, only.owner, only.leaseMs])
        : await run(many, [
            requests.map((r) => r.key),
            requests.map((r) => r.owner),
            requests.map((r) => r.leaseMs),
          ]);
    return rows as unknown as GrantedRow[];
  };
}
