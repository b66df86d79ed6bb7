import type { LeaseRequest } from '../../types.js';
import { keyComparator, sortByKey } from '../../validate.js';
import type { NormalizedPageOp } from '../../validate-page.js';
import type { GrantedRow, Run, Statement } from '../dialect.js';
import { toText } from '../rows.js';
import type { Tables } from '../tables.js';
import { pgGateThenClock, pgGrant } from './acquire.js';

/** SQLSTATE unique_violation: a key-moving UPDATE found its `to` taken by a commit after the snapshot. */
const UNIQUE_VIOLATION = '23505';

type Put = Extract<NormalizedPageOp, { op: 'put' | 'create' }>;
type Move = Extract<NormalizedPageOp, { op: 'move' }>;

/**
 * claimPage (PostgreSQL): one prepared statement — acquire's grant, then data-modifying CTEs over
 * unnest() arrays that write only if the grant returned a row.
 *
 * Takes: $1 lease key, $2 owner, $3 leaseMs; the puts ($4–$6: keys, values, ttls), creates ($7–$9:
 * keys, values, ttls) and moves ($10–$13: froms, tos, values, ttls), ttl NULL = never expires,
 * each group sorted by key (a move by `from`) in code point order. Returns: no row when the lease
 * is held (then nothing else was written), else one row — the granted lease (key, token,
 * acquired_at, expires_at) and two comma-separated lists (NULL when empty) of the 1-based places,
 * in the create and move arrays, of the creates that wrote and the moves that moved.
 *
 * The parts, all on one instant `c.now`, read once after the sweep gate:
 * - `g`: acquire's single-key grant, unchanged (acquire.ts: its gate bucket in share mode, then the
 *   clock; the token from the fence, drawn under the row lock for an existing row). `w` is `c.now`
 *   when `g` granted and no row otherwise; every write below joins `w`, so a refused claim writes
 *   only what a refused acquire writes.
 * - `puts`: put.ts's upsert — one row write each.
 * - `creates`: INSERT … ON CONFLICT DO UPDATE … WHERE the old row has expired: an absent key is
 *   inserted, an expired record overwritten (one row write each); a live one is locked and left as
 *   it was (no write, not returned).
 * - moves whose `to` has no row in the statement's snapshot (`m.taken` false — nearly all: `to` is
 *   a due entry's next slot): `renamed` UPDATEs the live `from` row's key, value and expiry, the
 *   whole move in one row write. The others (`to` holds a row, live or expired): `vacated` deletes
 *   the live `from` and `replaced` upserts `to` for each one deleted — two writes. A `to` committed
 *   by someone else after the snapshot makes `renamed` fail with a unique violation, which rolls
 *   the whole statement back (nothing of it stays but the fence value it drew); the claim is
 *   then sent once more as `<prefix>page2`, the same statement with every move `taken`, which
 *   cannot fail that way (its upsert waits for such a writer, then overwrites the row). A `to`
 *   swept after the snapshot: the upsert inserts it.
 *
 * Why it is atomic in one round trip: one statement (after that rare unique violation, a second
 * one; the first left nothing). Every key of a page is distinct (validate-page.ts), so no row is
 * written twice and the CTEs, which all see one snapshot, commute. Exactly once under races: each
 * write locks its row and re-checks its condition on the row's newest version under READ
 * COMMITTED. Two pages moving one `from`: the later waits for the first's row lock, then finds the
 * row renamed (its newest version has another key) or deleted, and writes nothing. Two pages
 * creating one key: the later's insert waits for the first's, then conflicts, finds a live record
 * and writes nothing. The writes of a group are driven by its sorted array (nested loops over
 * unnest, which yields in order), so concurrent pages lock a group's rows in one order and queue
 * instead of deadlocking; a key used in different roles by two pages can still deadlock, and the
 * victim, rolled back whole, is re-run by SqlStore.
 */
export function pgClaimPage(
  t: Tables,
  run: Run,
): (
  lease: LeaseRequest,
  ops: readonly NormalizedPageOp[],
) => Promise<{ granted: GrantedRow | null; results: boolean[] }> {
  const statement = (name: string, taken: string): Statement => {
    const { upsert, onConflict } = pgGrant(t);
    const live = (r: string) => `(${r}.expires_at IS NULL OR ${r}.expires_at > w.now)`;
    const write = `INSERT INTO ${t.records} AS r ("key", value, expires_at)`;
    const replace =
      'ON CONFLICT ("key") DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at';
    return {
      name,
      text:
        `WITH ${pgGateThenClock(t, '$1::text')}, ` +
        `g AS (${upsert} SELECT $1::text, $2::text, nextval('${t.fence}'), c.now, c.now + $3::bigint, ` +
        `c.now + $3::bigint FROM c ${onConflict}), ` +
        'w AS (SELECT c.now FROM c, g), ' +
        `puts AS (${write} SELECT u.k, u.v, w.now + u.ttl FROM w, ` +
        `unnest($4::text[], $5::text[], $6::bigint[]) AS u(k, v, ttl) ${replace}), ` +
        `creates AS (${write} SELECT u.k, u.v, w.now + u.ttl FROM w, ` +
        `unnest($7::text[], $8::text[], $9::bigint[]) AS u(k, v, ttl) ` +
        `${replace} WHERE r.expires_at <= (SELECT now FROM c) RETURNING r."key"), ` +
        `m AS (SELECT u.f, u.t, u.v, u.ttl, u.i, ${taken} AS taken ` +
        'FROM unnest($10::text[], $11::text[], $12::text[], $13::bigint[]) WITH ORDINALITY AS u(f, t, v, ttl, i)), ' +
        `renamed AS (UPDATE ${t.records} AS r SET "key" = m.t, value = m.v, expires_at = w.now + m.ttl ` +
        `FROM w, m WHERE NOT m.taken AND r."key" = m.f AND ${live('r')} RETURNING m.i), ` +
        `vacated AS (DELETE FROM ${t.records} AS r USING w, m ` +
        `WHERE m.taken AND r."key" = m.f AND ${live('r')} RETURNING m.i, m.t, m.v, m.ttl), ` +
        `replaced AS (${write} SELECT d.t, d.v, w.now + d.ttl FROM w, vacated AS d ORDER BY d.t ${replace}) ` +
        'SELECT g."key", g.token, g.acquired_at, g.expires_at, ' +
        "(SELECT string_agg(u.i::text, ',') FROM creates JOIN unnest($7::text[]) WITH ORDINALITY AS u(k, i) " +
        'ON u.k = creates."key") AS created, ' +
        "(SELECT string_agg(x.i::text, ',') FROM (SELECT i FROM renamed UNION ALL SELECT i FROM vacated) AS x) AS moved " +
        'FROM g',
    };
  };
  const renaming = statement(
    `${t.prefix}page`,
    `EXISTS (SELECT 1 FROM ${t.records} AS x WHERE x."key" = u.t)`,
  );
  const replacing = statement(`${t.prefix}page2`, 'true');

  return async (lease, ops) => {
    const puts: Put[] = [];
    const creates: Put[] = [];
    const moves: Move[] = [];
    for (const op of ops) {
      if (op.op === 'move') moves.push(op);
      else (op.op === 'put' ? puts : creates).push(op);
    }
    sortByKey(puts);
    sortByKey(creates);
    const byFrom = keyComparator(moves.map((op) => ({ key: op.from })));
    moves.sort((a, b) => byFrom(a.from, b.from));
    const params = [
      lease.key,
      lease.owner,
      lease.leaseMs,
      puts.map((op) => op.key),
      puts.map((op) => op.value),
      puts.map((op) => op.ttlMs ?? null) as unknown as readonly number[],
      creates.map((op) => op.key),
      creates.map((op) => op.value),
      creates.map((op) => op.ttlMs ?? null) as unknown as readonly number[],
      moves.map((op) => op.from),
      moves.map((op) => op.to),
      moves.map((op) => op.value),
      moves.map((op) => op.ttlMs ?? null) as unknown as readonly number[],
    ];
    let rows: Awaited<ReturnType<Run>>['rows'];
    try {
      ({ rows } = await run(renaming, params));
    } catch (err) {
      if ((err as { code?: unknown } | null)?.code !== UNIQUE_VIOLATION) throw err;
      ({ rows } = await run(replacing, params));
    }
    const row = rows[0];
    if (!row) return { granted: null, results: ops.map(() => false) };
    const created = places(row['created'], creates);
    const moved = places(row['moved'], moves);
    return {
      granted: row as unknown as GrantedRow,
      results: ops.map((op) =>
        op.op === 'put' ? true : op.op === 'create' ? created.has(op) : moved.has(op),
      ),
    };
  };
}

/** The ops at the 1-based places of a comma-separated list (`string_agg` of ordinals; NULL = none). */
function places(list: unknown, group: readonly NormalizedPageOp[]): Set<NormalizedPageOp> {
  const out = new Set<NormalizedPageOp>();
  if (list === null || list === undefined) return out;
  for (const n of toText(list).split(',')) out.add(group[Number(n) - 1]!);
  return out;
}
