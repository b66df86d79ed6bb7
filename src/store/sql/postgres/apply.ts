import type { NormalizedWriteOp } from '../../validate.js';
import { sortByKey } from '../../validate.js';
import type { Run, SqlValue, Statement } from '../dialect.js';
import { lockOrder } from '../lock-order.js';
import { toText } from '../rows.js';
import type { Tables } from '../tables.js';
import { PG_NOW_CTE } from './clock.js';

/** The single-op statements a batch with a repeated key runs one after another ($n parameters). */
export interface PgWriteStatements {
  /** ($1 key, $2 value, $3 ttlMs) — put.ts. */
  put: Statement;
  /** ($1 key) → 1 row deleted when the record was live — the shared delete statement. */
  delete: Statement;
  /** ($1 key, $2 value) → 1 row deleted when the live record held `value` — the shared deleteIf. */
  deleteIf: Statement;
  /** ($1 key, $2 token, $3 holdUntil) → 1 row updated when the token held the lease — release.ts. */
  release: Statement;
}

/** Sends one simple-protocol query (no parameters; several statements allowed); its results. */
export type SimpleQuery = (text: string) => Promise<readonly { rowCount: number | null }[]>;

/**
 * apply (PostgreSQL): one statement for the whole batch whenever it can be written as at most one
 * write per row (distinct leases; records in any order but delete-then-put of one key), else one
 * multi-statement query; either way one round trip, all or nothing.
 *
 * One statement — a prepared statement with up to three data-modifying CTEs over unnest() arrays
 * (only those the batch needs: one prepared statement per combination, see `applyStatement`):
 * `puts` is put.ts's upsert, `deletes` the shared delete and deleteIf, `releases` release.ts's
 * UPDATE, each for many keys, on one clock instant read once in `c`. Takes: put keys, values, ttls
 * (NULL = never expires); delete keys and the value each must hold (NULL = any: a plain delete);
 * release keys, tokens, holdUntils (0 = none). Returns: one row of two comma-separated lists
 * (`d`, `r`; NULL when empty) of the 1-based places, in the delete and release arrays, of the
 * live records deleted and the leases released; a compare-and-delete whose record holds another
 * value (as the DELETE sees the row: the newest version, re-checked after a concurrent writer's
 * commit) deletes nothing and is not listed, like a stale release. All CTEs see one snapshot
 * and a statement may not change a row twice, so each row gets one write: a record key's ops are
 * collapsed in order first (see {@link planTogether}: repeated puts of one key, put-then-delete
 * and the like keep this path), and a lease key may appear once. Rows of different keys commute,
 * so applying them "at once" is applying them in order. Each array is sorted by key, so
 * concurrent batches lock rows of one table in the same order.
 *
 * Otherwise (a lease released twice; a record deleted and then put again; a record touched again
 * after a compare-and-delete whose outcome only the row knows) — the single-op
 * statements themselves, in lock order (../lock-order.ts: one row's ops in the caller's order),
 * sent as one simple-protocol query, which PostgreSQL runs as one implicit transaction (as
 * migrate does): later statements see earlier ones' writes. The simple protocol takes no parameters, so values are inlined — never as quoted
 * text: every string becomes `convert_from(decode('<hex of its UTF-8>', 'hex'), 'UTF8')` (only hex
 * digits reach the SQL text, whatever `standard_conforming_strings` says; a NUL still fails as it
 * would as a parameter), numbers are validated safe integers. Parsed per call, not prepared: it
 * is the rare path.
 *
 * Why it is atomic in one round trip: one statement, or one implicit transaction; an error rolls
 * back all of it (a deadlock victim may then be re-run whole). Every write locks its row and
 * re-checks its condition on the newest version under READ COMMITTED, exactly as the single calls:
 * a release still needs the token to hold an unexpired lease, ends it as release.ts does (at
 * holdUntil if later than now, else at once, written as its `acquired_at`) and never writes a token. Like release, apply takes no sweep gate (gate.ts): the gate protects tokens
 * drawn before a row could be swept, and apply draws none — it only shortens or keeps leases live
 * rows already have, and sweep re-checks `expires_at <= now` on the row it deletes.
 */
export function pgApply(
  t: Tables,
  run: Run,
  simple: SimpleQuery,
  single: PgWriteStatements,
): (ops: readonly NormalizedWriteOp[]) => Promise<boolean[]> {
  // One prepared statement per combination of what a batch holds (puts, deletes, releases): most
  // batches hold one or two kinds (history puts; a page's delete and release). PostgreSQL plans
  // this statement afresh at each call (custom plans: the arrays' sizes vary), and planning the
  // three CTEs cost ~0.45 ms a call — as much as running a history batch of 25 puts (bench:scale
  // --variant jitter, pg_stat_statements). A CTE with nothing to do is left out instead.
  const statements = new Map<number, Statement>();
  const statementOf = (puts: boolean, deletes: boolean, releases: boolean): Statement => {
    const kinds = (puts ? 1 : 0) | (deletes ? 2 : 0) | (releases ? 4 : 0);
    let statement = statements.get(kinds);
    if (!statement) {
      statement = applyStatement(t, puts, deletes, releases);
      statements.set(kinds, statement);
    }
    return statement;
  };

  const together = async (plan: Plan): Promise<boolean[]> => {
    const puts = plan.puts.length > 0;
    const deletes = plan.deletes.length > 0;
    const releases = plan.releases.length > 0;
    const params: SqlValue[] = [];
    if (puts)
      params.push(
        plan.puts.map((op) => op.key),
        plan.puts.map((op) => op.value),
        plan.puts.map((op) => op.ttlMs ?? null) as unknown as readonly number[],
      );
    if (deletes)
      params.push(
        plan.deletes.map((d) => d.key),
        plan.deletes.map((d) => d.ifValue ?? null) as unknown as readonly string[],
      );
    if (releases)
      params.push(
        plan.releases.map((op) => op.key),
        plan.releases.map((op) => op.token),
        plan.releases.map((op) => op.holdUntil ?? 0),
      );
    const { rows } = await run(statementOf(puts, deletes, releases), params);
    // One row: the 1-based places (in plan.deletes, plan.releases) of the records deleted and
    // the leases released, comma-separated — not a row per key (~3 per run) for the driver to parse.
    const deleted = places(rows[0]?.['d'], plan.deletes.length);
    const released = places(rows[0]?.['r'], plan.releases.length);
    return plan.results.map((r) =>
      typeof r === 'boolean'
        ? r
        : r.op === 'd'
          ? deleted[plan.deletePlace.get(r.key)!]!
          : released[plan.releasePlace.get(r.key)!]!,
    );
  };

  const inOrder = async (ops: readonly NormalizedWriteOp[]): Promise<boolean[]> => {
    const order = lockOrder(ops);
    const texts = order.map((i) => {
      const op = ops[i]!;
      if (op.op === 'put') return inline(single.put, [op.key, op.value, op.ttlMs ?? null]);
      if (op.op === 'delete') {
        if (op.ifValue !== undefined) return inline(single.deleteIf, [op.key, op.ifValue]);
        return inline(single.delete, [op.key]);
      }
      return inline(single.release, [op.key, op.token, op.holdUntil ?? 0]);
    });
    const results = await simple(texts.join(';\n'));
    const applied: boolean[] = new Array(ops.length).fill(false);
    order.forEach((i, at) => {
      applied[i] = ops[i]!.op === 'put' || (results[at]?.rowCount ?? 0) > 0;
    });
    return applied;
  };

  return async (ops) => {
    const plan = planTogether(ops);
    return plan ? together(plan) : inOrder(ops);
  };
}

/**
 * The one statement of a batch with the given kinds of writes (at least one): `puts` — keys,
 * values, ttls; `deletes` — keys, the values they must hold; `releases` — keys, tokens,
 * holdUntils; parameters numbered in that order, only for the kinds present.
 */
function applyStatement(t: Tables, puts: boolean, deletes: boolean, releases: boolean): Statement {
  let n = 0;
  const $ = () => `$${++n}`;
  const ctes = [PG_NOW_CTE];
  if (puts)
    ctes.push(
      `puts AS (INSERT INTO ${t.records} AS r ("key", value, expires_at) ` +
        `SELECT u.k, u.v, c.now + u.ttl FROM c, unnest(${$()}::text[], ${$()}::text[], ${$()}::bigint[]) AS u(k, v, ttl) ` +
        `ON CONFLICT ("key") DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at)`,
    );
  if (deletes)
    ctes.push(
      `deletes AS (DELETE FROM ${t.records} AS r USING c, unnest(${$()}::text[], ${$()}::text[]) WITH ORDINALITY AS u(k, v, i) ` +
        `WHERE r."key" = u.k AND (u.v IS NULL OR r.value = u.v) ` +
        `AND (r.expires_at IS NULL OR r.expires_at > c.now) RETURNING u.i)`,
    );
  if (releases)
    ctes.push(
      `releases AS (UPDATE ${t.leases} AS l SET expires_at = CASE WHEN u.hold > c.now THEN u.hold ELSE l.acquired_at END ` +
        `FROM c, unnest(${$()}::text[], ${$()}::bigint[], ${$()}::bigint[]) WITH ORDINALITY AS u(k, token, hold, i) ` +
        `WHERE l."key" = u.k AND l.token = u.token AND l.expires_at > c.now RETURNING u.i)`,
    );
  const agg = (cte: string) => `(SELECT string_agg(i::text, ',') FROM ${cte})`;
  return {
    name: `${t.prefix}apply${puts ? 'p' : ''}${deletes ? 'd' : ''}${releases ? 'r' : ''}`,
    text: `${ctes.join(', ')} SELECT ${deletes ? agg('deletes') : 'NULL::text'} AS d, ${releases ? agg('releases') : 'NULL::text'} AS r`,
  };
}

/** What the one-statement path writes, and how each op's result is read from its output. */
interface Plan {
  /** The last put of each record key whose last write is a put, sorted by key. */
  puts: Extract<NormalizedWriteOp, { op: 'put' }>[];
  /** Record keys whose last write is a delete (with the value it needs, if any), sorted by key. */
  deletes: { key: string; ifValue: string | undefined }[];
  /** Releases (distinct keys), sorted by key. */
  releases: Extract<NormalizedWriteOp, { op: 'release' }>[];
  /** Per op: its result, known in advance, or the key whose delete or release decides it. */
  results: (boolean | { op: 'd' | 'r'; key: string })[];
  /** Where each key is in `deletes` and in `releases`. */
  deletePlace: Map<string, number>;
  releasePlace: Map<string, number>;
}

/** The 0-based places set in a comma-separated list of 1-based ones (`string_agg` of ordinals; NULL = none). */
function places(list: unknown, size: number): boolean[] {
  const out = new Array<boolean>(size).fill(false);
  if (list === null || list === undefined) return out;
  for (const n of toText(list).split(',')) out[Number(n) - 1] = true;
  return out;
}

/**
 * What the batch knows of a record key after its ops so far: nothing yet (the row decides), dead,
 * live with a value it put, or `'row'` — a compare-and-delete was left to the row, so only the
 * row knows whether the record is still there.
 */
type Known = undefined | { live: false } | { live: true; value: string } | 'row';

/**
 * The batch as one write per row, or `undefined` when that cannot express it. A record's ops
 * collapse: a put answers true and leaves the record live with its value; a delete answers
 * whether it was live (with `ifValue`, live with exactly that value), which is known once an
 * earlier op of the batch wrote the key, and otherwise read from the statement's own delete; the
 * row gets only the key's last write. That fails for a key whose first op is a delete (its
 * answer needs the row as it was) and whose last write is a put (a second write of the row), and
 * for any op after a compare-and-delete the row decided (its answer, or the row's state, would
 * depend on that outcome). A compare-and-delete that the batch knows does not match writes
 * nothing. A lease key may appear once: a release's answer depends on the token in the row, so
 * repeated releases go statement by statement.
 */
function planTogether(ops: readonly NormalizedWriteOp[]): Plan | undefined {
  const known = new Map<string, Known>();
  const last = new Map<string, Extract<NormalizedWriteOp, { op: 'put' | 'delete' }>>();
  const readsRow = new Set<string>();
  const releases = new Map<string, Extract<NormalizedWriteOp, { op: 'release' }>>();
  const results: Plan['results'] = [];
  for (const op of ops) {
    if (op.op === 'release') {
      if (releases.has(op.key)) return undefined;
      releases.set(op.key, op);
      results.push({ op: 'r', key: op.key });
      continue;
    }
    const state = known.get(op.key);
    if (state === 'row') return undefined;
    if (op.op === 'put') {
      results.push(true);
      known.set(op.key, { live: true, value: op.value });
      last.set(op.key, op);
      continue;
    }
    if (state === undefined) {
      readsRow.add(op.key);
      results.push({ op: 'd', key: op.key });
      known.set(op.key, op.ifValue === undefined ? { live: false } : 'row');
      last.set(op.key, op);
      continue;
    }
    const matches = state.live && (op.ifValue === undefined || op.ifValue === state.value);
    results.push(matches);
    if (matches) {
      // Live with a value this batch put: a plain delete of the row does the same.
      known.set(op.key, { live: false });
      last.set(op.key, { op: 'delete', key: op.key, ifValue: undefined });
    }
  }
  const puts: Plan['puts'] = [];
  const deletes: Plan['deletes'] = [];
  for (const op of last.values()) {
    if (op.op === 'put') {
      if (readsRow.has(op.key)) return undefined;
      puts.push(op);
    } else {
      deletes.push({ key: op.key, ifValue: op.ifValue });
    }
  }
  sortByKey(deletes);
  const sortedReleases = sortByKey([...releases.values()]);
  return {
    puts: sortByKey(puts),
    deletes,
    releases: sortedReleases,
    results,
    deletePlace: new Map(deletes.map((d, i) => [d.key, i])),
    releasePlace: new Map(sortedReleases.map((r, i) => [r.key, i])),
  };
}

/** `statement` with `$n` replaced by injection-proof literals of `values[n - 1]`. */
function inline(statement: Statement, values: readonly SqlValue[]): string {
  return statement.text.replace(/\$(\d+)/g, (_, n: string) => {
    const value = values[Number(n) - 1];
    if (value === null || value === undefined) return 'NULL';
    if (typeof value === 'number') {
      if (!Number.isSafeInteger(value)) throw new Error(`cannot inline ${value}`);
      return String(value);
    }
    if (typeof value === 'string') {
      return `convert_from(decode('${Buffer.from(value, 'utf8').toString('hex')}', 'hex'), 'UTF8')`;
    }
    throw new Error('cannot inline an array');
  });
}
