import type { LeaseRequest } from '../../types.js';
import { keyComparator } from '../../validate.js';
import type { NormalizedPageOp } from '../../validate-page.js';
import type { GrantedRow } from '../dialect.js';
import type { Tables } from '../tables.js';
import { FENCE_SLOTS, mysqlLeaseUpsert } from './acquire.js';
import { keyText } from './apply.js';
import { MYSQL_SET_SCRIPT_NOW, MYSQL_SCRIPT_NOW as NOW } from './clock.js';
import type { MysqlHeader, ScriptPart } from './driver.js';
import { mysqlBytes, mysqlLiteral } from './literal.js';
import { mysqlPutRows } from './put.js';

/** ER_SUBQUERY_NO_1_ROW: what the guard raises when the page's lease is held (see below). */
const LEASE_HELD = 1242;

/** A page claim's script and how to read its answer (see {@link mysqlClaimPageScript}). */
export interface MysqlClaimPageScript {
  parts: ScriptPart[];
  /** The grant and the per-op results, from the results of `parts` (the script ran to COMMIT). */
  read(results: readonly unknown[]): { granted: GrantedRow; results: boolean[] };
}

/** Whether `err` is the guard's refusal: the page's lease is held, and nothing was applied. */
export function mysqlLeaseHeld(err: unknown): boolean {
  return (err as { errno?: unknown } | null)?.errno === LEASE_HELD;
}

/**
 * claimPage (MySQL 8 / MariaDB 10.6+): one transaction sent as one multi-statement query (one
 * round trip, one commit), values inlined as sql_mode-proof literals (literal.ts; keys compared as
 * binary constants, `mysqlBytes`), on one store instant: the script's clock (clock.ts), read first.
 * Without multipleStatements the same statements go one by one on one connection, still inside
 * START TRANSACTION … COMMIT.
 *
 * Takes: the page's lease request and validated ops (every key at most once: a put's or create's
 * key, a move's from and to). Returns ({@link MysqlClaimPageScript.read}) the granted lease row and
 * one result per op, in the caller's order; a held lease surfaces as the guard's error
 * ({@link mysqlLeaseHeld}) — then nothing was applied.
 *
 * 1. The lease, as acquire.ts takes one key (its upsert), on the script's instant: one upsert that inserts the
 *    key or takes its row only if the lease has expired (marker token 0), leaving the row X-locked;
 *    its VALUES row sets `LAST_INSERT_ID(now)` and the held branch resets it to 0, so the OK packet's
 *    insertId is acquired_at when granted and 0 when held. Then the **guard**: a scalar subquery
 *    that yields two rows exactly when `LAST_INSERT_ID() = 0`, so a held lease fails the script
 *    here (ER_SUBQUERY_NO_1_ROW), nothing after it runs, and runScript rolls the transaction back
 *    (that refusal costs a second round trip, the ROLLBACK; a grant never does). Then the fence
 *    draw (`INSERT INTO fence`, insertId F, drawn while holding the row: acquire.ts says why that
 *    keeps tokens growing per key across sweep) and `token = F * 1024`, above every token the
 *    store granted before, for any key.
 * 2. Moves, by `from` in key order (the lock order of every page):
 *    - `SELECT key … WHERE key IN (froms) AND live FOR UPDATE`: the live froms, X-locked until
 *      COMMIT — exactly the moves that succeed (nobody can change a locked row, and the writes below
 *      judge liveness at the same instant). The result set is each move's answer;
 *    - `UPDATE IGNORE records SET value, expires_at, key = to WHERE key IN (froms) AND live`: **one
 *      row write per move** — the record changes its key in place. Each row finds its op once,
 *      `FIELD(key, froms…)`, kept in LAST_INSERT_ID for `ELT(…, tos…)` and the others (a
 *      multi-table UPDATE joined to a derived table of the pairs went through an on-disk temporary
 *      table and measured twice as slow here). A move whose `to` already exists (live or expired)
 *      would be a duplicate key: IGNORE leaves that row as it was. (InnoDB writes a key change as
 *      delete-mark + insert inside the one row update: on MariaDB 10.11 it measured ~15 ms per
 *      1,000 moves against ~9 ms for a DELETE plus a multi-row INSERT — fewer rows written, a
 *      little more server time);
 *    - the rare remainder (froms still live: their `to` existed) is counted without locks into
 *      `@oncely_left`, and two statements guarded by `@oncely_left > 0` — a user variable the
 *      optimizer reads as a constant: "Impossible WHERE", no rows read or locked when 0 — write
 *      `to` from them (INSERT … SELECT … ON DUPLICATE KEY UPDATE: replacing what `to` held) and
 *      delete them. Two row writes for such a move.
 * 3. Creates, in key order: one multi-row `INSERT … ON DUPLICATE KEY UPDATE` that inserts an absent
 *    key, overwrites an expired record (value and expiry, in place), and leaves a live one as it
 *    was (no change: no row write). The outcome is marked per row with LAST_INSERT_ID: each VALUES
 *    row sets it to 1 (written), the live branch of the update resets it to 0 (IF evaluates only
 *    the branch it takes). MariaDB returns it per row (`RETURNING key, LAST_INSERT_ID()`, evaluated
 *    as each row is written); MySQL 8 has no RETURNING, so one such statement per create and the
 *    OK packet's insertId (LAST_INSERT_ID(expr) is reported there). One row write per winning
 *    create, none for a losing one.
 * 4. Puts, in key order: one multi-row upsert (put.ts).
 *
 * Why it is atomic and gives each item to exactly one of racing pages: one transaction, and every
 * statement that decides an outcome reads the newest committed version of its rows under their
 * row locks (locking read, UPDATE, INSERT's duplicate check), whatever the isolation level. A
 * from is claimed by the page that locked it live; a racing page waits on that lock and, after
 * the commit, finds no live row at `from`. Of pages inserting one absent key, one inserts and the
 * others wait on its row and then find it live (no write, answer 0). No statement locks a key that
 * is absent before inserting into its gap (the pre-read only reads froms, and a from that is
 * gone is one another page already took), so concurrent pages do not deadlock on each other's
 * gap locks; rows are locked by key within each kind (lease, froms, tos, creates, puts), so
 * pages holding the same items in any order queue behind each other. Should InnoDB still pick a
 * victim, it rolls the whole transaction back and the store runs the page again.
 */
export function mysqlClaimPageScript(
  t: Tables,
  lease: LeaseRequest,
  ops: readonly NormalizedPageOp[],
  options: { returning: boolean },
): MysqlClaimPageScript {
  const row = `(?, ?, 0, LAST_INSERT_ID(${NOW}), ${NOW} + ?, ${NOW} + ?)`;
  const parts: ScriptPart[] = [
    { sql: MYSQL_SET_SCRIPT_NOW, values: [] },
    {
      sql: mysqlLeaseUpsert(t, row, 'token + 0 * LAST_INSERT_ID(0)'),
      values: [lease.key, lease.owner, lease.leaseMs, lease.leaseMs],
    },
    {
      sql: 'SELECT (SELECT 1 FROM (SELECT 1 AS held UNION ALL SELECT 2) AS lease_held WHERE LAST_INSERT_ID() = 0) AS guard',
      values: [],
    },
    { sql: `INSERT INTO ${t.fence} () VALUES ()`, values: [] },
    {
      sql: `UPDATE ${t.leases} SET token = LAST_INSERT_ID() * ${FENCE_SLOTS} WHERE \`key\` = ? AND token = 0`,
      values: [lease.key],
    },
  ];
  const indexes = ops.map((_, i) => i);
  const byKey = keyComparator(ops.map((op) => ({ key: op.op === 'move' ? op.from : op.key })));
  const keyOf = (i: number) => {
    const op = ops[i]!;
    return op.op === 'move' ? op.from : op.key;
  };
  const sorted = (kind: NormalizedPageOp['op']) =>
    indexes.filter((i) => ops[i]!.op === kind).sort((a, b) => byKey(keyOf(a), keyOf(b)));
  const moves = sorted('move');
  const creates = sorted('create');
  const puts = sorted('put');

  const live = `(expires_at IS NULL OR expires_at > ${NOW})`;
  const movedPart = parts.length;
  if (moves.length > 0) {
    const move = (i: number) => ops[i] as NormalizedPageOp & { op: 'move' };
    const list = (cell: (op: NormalizedPageOp & { op: 'move' }) => string) =>
      moves.map((i) => cell(move(i))).join(', ');
    const froms = list((op) => mysqlBytes(op.from));
    const mine = `\`key\` IN (${froms}) AND ${live}`;
    // A row's move is found once, by FIELD (a scan of the list), and its place kept in
    // LAST_INSERT_ID, the statement's register, for the items after it (assignments and select
    // items are evaluated left to right; a user variable would be deprecated in MySQL 8).
    const pick = (first: boolean, cells: string) =>
      `ELT(${first ? `LAST_INSERT_ID(FIELD(\`key\`, ${froms}))` : 'LAST_INSERT_ID()'}, ${cells})`;
    const tos = list((op) => mysqlBytes(op.to));
    const values = list((op) => mysqlLiteral(op.value));
    const ttls = list((op) => mysqlLiteral(op.ttlMs ?? null));
    parts.push(
      { sql: `SELECT \`key\` FROM ${t.records} WHERE ${mine} FOR UPDATE`, values: [] },
      {
        sql:
          `UPDATE IGNORE ${t.records} SET value = ${pick(true, values)}, ` +
          `expires_at = ${NOW} + ${pick(false, ttls)}, \`key\` = ${pick(false, tos)} WHERE ${mine}`,
        values: [],
      },
      { sql: `SET @oncely_left = (SELECT COUNT(*) FROM ${t.records} WHERE ${mine})`, values: [] },
      {
        sql:
          `INSERT INTO ${t.records} (\`key\`, value, expires_at) ` +
          `SELECT ${pick(true, tos)}, ${pick(false, values)}, ${NOW} + ${pick(false, ttls)} ` +
          `FROM ${t.records} WHERE @oncely_left > 0 AND ${mine} ` +
          'ON DUPLICATE KEY UPDATE value = VALUES(value), expires_at = VALUES(expires_at)',
        values: [],
      },
      { sql: `DELETE FROM ${t.records} WHERE @oncely_left > 0 AND ${mine}`, values: [] },
    );
  }

  const createdPart = parts.length;
  const createRow = `(?, ?, IF(LAST_INSERT_ID(1), ${NOW} + ?, NULL))`;
  const createSql = (n: number, returning: boolean) =>
    `INSERT INTO ${t.records} (\`key\`, value, expires_at) VALUES ${Array.from({ length: n }, () => createRow).join(', ')} ` +
    `ON DUPLICATE KEY UPDATE value = IF(expires_at <= ${NOW}, VALUES(value), IF(LAST_INSERT_ID(0), value, value)), ` +
    `expires_at = IF(expires_at <= ${NOW}, VALUES(expires_at), expires_at)` +
    (returning ? ' RETURNING `key`, LAST_INSERT_ID() AS won' : '');
  const rowValues = (i: number) => {
    const op = ops[i] as NormalizedPageOp & { op: 'create' | 'put' };
    return [op.key, op.value, op.ttlMs ?? null];
  };
  if (creates.length > 0 && options.returning)
    parts.push({ sql: createSql(creates.length, true), values: creates.flatMap(rowValues) });
  else for (const i of creates) parts.push({ sql: createSql(1, false), values: rowValues(i) });

  if (puts.length > 0)
    parts.push({ sql: mysqlPutRows(t, puts.length, NOW), values: puts.flatMap(rowValues) });

  return {
    parts,
    read(results) {
      const acquiredAt = Number((results[1] as MysqlHeader).insertId);
      const fence = Number((results[3] as MysqlHeader).insertId);
      const granted: GrantedRow = {
        key: lease.key,
        token: fence * FENCE_SLOTS,
        acquired_at: acquiredAt,
        expires_at: acquiredAt + lease.leaseMs,
      };
      const out = ops.map((op) => op.op === 'put');
      if (moves.length > 0) {
        const locked = new Set(
          ((results[movedPart] ?? []) as { key: unknown }[]).map((row) => keyText(row.key)),
        );
        for (const i of moves) out[i] = locked.has(keyOf(i));
      }
      if (creates.length > 0 && options.returning) {
        const won = new Set<string>();
        for (const row of (results[createdPart] ?? []) as { key: unknown; won: unknown }[])
          if (Number(row.won) === 1) won.add(keyText(row.key));
        for (const i of creates) out[i] = won.has(keyOf(i));
      } else
        creates.forEach((i, n) => {
          out[i] = Number((results[createdPart + n] as MysqlHeader).insertId) === 1;
        });
      return { granted, results: out };
    },
  };
}
