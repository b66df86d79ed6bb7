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
  const { upsert, onConflict } = pgGrant(t);
  const one: Statement = {
    name: `${t.prefix}acquire1`,
    text:
      `WITH ${pgGateThenClock(t, '$1::text')} ${upsert} ` +
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

/**
 * The grant itself, shared with claim-page.ts: `upsert` is `INSERT INTO <leases> (…)`, to be
 * followed by a SELECT of (key, owner, pre-drawn token, now, now + ms, now + ms), and `onConflict`
 * takes an existing row only when its lease has expired, drawing its token then, and returns the
 * granted row (key, token, acquired_at, expires_at).
 */
export function pgGrant(t: Tables): { upsert: string; onConflict: string } {
  return {
    upsert: `INSERT INTO ${t.leases} AS l ("key", owner, token, acquired_at, expires_at, sweep_at)`,
    onConflict:
      `ON CONFLICT ("key") DO UPDATE SET owner = EXCLUDED.owner, token = nextval('${t.fence}'), ` +
      `acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at ` +
      `WHERE l.expires_at <= EXCLUDED.acquired_at ` +
      `RETURNING l."key" AS "key", l.token, l.acquired_at, l.expires_at`,
  };
}

/**
 * `c AS (…)` for a grant of one key (the text parameter `keyParam`): takes the key's sweep gate
 * bucket in share mode, then reads the clock once, as `c.now`. The lock call comes first in the
 * target list, so the clock is read after any wait for a sweep.
 */
export function pgGateThenClock(t: Tables, keyParam: string): string {
  return `c AS (SELECT pg_advisory_xact_lock_shared(${gateSpace(t)}, ${gateBucket(keyParam)}) AS gate, ${PG_NOW} AS now)`;
}
