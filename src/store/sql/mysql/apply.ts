import type { NormalizedWriteOp } from '../../validate.js';
import type { SqlSyntax, Statement } from '../dialect.js';
import { lockOrder } from '../lock-order.js';
import { SharedStatements } from '../statements.js';
import type { Tables } from '../tables.js';
import { MYSQL_SET_SCRIPT_NOW, MYSQL_SCRIPT_NOW as NOW } from './clock.js';
import type { MysqlHeader, ScriptPart } from './driver.js';
import { mysqlBytes } from './literal.js';
import { mysqlPutRows } from './put.js';
import { mysqlRelease, mysqlReleaseNow } from './release.js';

/**
 * The single-op statements a batch reuses, on the script's clock (clock.ts MYSQL_SCRIPT_NOW), with
 * their parameter orders; built once per store ({@link mysqlWriteStatements}).
 */
export interface MysqlWriteStatements {
  /** The put of `n` rows, (key, value, ttlMs) each — put.ts's mysqlPutRows. */
  putRows: (n: number) => string;
  /** (key) → affectedRows 1 when a live record was deleted — the shared delete statement. */
  delete: Statement;
  /**
   * (key, value) → affectedRows 1 when a live record holding exactly `value` was deleted — the
   * shared deleteIf, comparing bytes (the dialect's `sameValue`: no PAD SPACE).
   */
  deleteIf: Statement;
  /** (holdUntil, holdUntil, key, token) → insertId > 0 when the token held the lease — release.ts. */
  release: Statement;
  /** (key, token) → the same, for a release without a hold — release.ts. */
  releaseNow: Statement;
}

/** The statements of {@link MysqlWriteStatements} for tables `t`, read with the dialect's `syntax`. */
export function mysqlWriteStatements(t: Tables, syntax: SqlSyntax): MysqlWriteStatements {
  const shared = new SharedStatements(t, { ...syntax, now: NOW });
  return {
    putRows: (n) => mysqlPutRows(t, n, NOW),
    delete: shared.delete,
    deleteIf: shared.deleteIf,
    release: mysqlRelease(t, NOW),
    releaseNow: mysqlReleaseNow(t, NOW),
  };
}

/** How one op's answer is read from its statement's result. */
type Answer = 'put' | 'affected' | 'insertId' | 'returned';

export interface MysqlApplyScript {
  parts: ScriptPart[];
  /** Per op, in the caller's order: the part (statement) that carries it… */
  partOf: number[];
  /** …and how its answer is read from that part's result. */
  answer: Answer[];
}

/**
 * apply (MySQL 8 / MariaDB 10.6+): one transaction sent as one multi-statement query (one round
 * trip, one commit), in lock order (../lock-order.ts: records then leases, by key; one row's ops in
 * the caller's order), values inlined as sql_mode-proof literals (runScript, literal.ts). Without
 * multipleStatements the same statements go one by one on one connection, still inside
 * START TRANSACTION … COMMIT (correct and atomic, but a round trip each).
 *
 * The script reads the clock once, first (clock.ts: MYSQL_SCRIPT_NOW). Then, in lock order:
 * - a run of puts is one multi-row upsert, its rows in that order (the same rows locked in the same
 *   order; a key repeated in the run updates the row an earlier one wrote, as a second statement
 *   would);
 * - with `returning` (MariaDB, which has DELETE … RETURNING), a run of deletes of distinct keys, all
 *   plain or all with `ifValue`, is one `DELETE … WHERE key IN (…) … RETURNING key`: the range scan
 *   locks and deletes the rows in key order (the lock order) and returns the keys it deleted — each
 *   op's answer; a compare-and-delete matches `(key, bytes of value)` against a list of binary
 *   constants (one sorted list the server searches, where an expression per element would be
 *   converted for every row). Otherwise (MySQL 8) one DELETE per op;
 * - one UPDATE per release (a release's new end differs per row; a join to a derived table of
 *   (key, token, hold) rows measured no faster on MariaDB than these statements once they name the
 *   script's clock instead of reading it).
 *
 * Takes: validated ops. Returns (see {@link mysqlApplied}), per op in the caller's order: put →
 * true; delete → the record was live (with ifValue, holding exactly that value) and is deleted
 * (affectedRows > 0, or its key among those returned; a DELETE that matches no row is no error, so
 * the script goes on); release → insertId > 0 (the token held an unexpired lease, which now ends at
 * max(now, holdUntil); `LAST_INSERT_ID(expr)` is reported in a statement's own OK packet only when
 * its SET ran, so an earlier release in the batch never leaks into a later one's answer, and it
 * marks a match even when the new end equals the old one, which affectedRows would not count).
 * A batch of one op never comes here (dialect.ts: that statement alone, prepared, autocommit).
 *
 * Why it is atomic, all or nothing: START TRANSACTION … COMMIT around statements that each lock
 * the rows they touch and re-check value, token and expiry on their newest version (as the single
 * calls do); an error stops the script before COMMIT and `runScript` rolls the transaction back (a
 * deadlock already rolled all of it back, so the store may run the batch again). Later statements
 * see earlier ones' writes, so a key may repeat (a repeated key ends a grouped DELETE: the next
 * statement then sees the first one's delete). Lock order keeps concurrent batches from
 * deadlocking on each other's rows; should InnoDB still pick a victim (gap locks), it rolls that
 * transaction back whole and the store runs the batch again.
 */
export function mysqlApplyScript(
  statements: MysqlWriteStatements,
  t: Tables,
  ops: readonly NormalizedWriteOp[],
  options: { returning: boolean },
): MysqlApplyScript {
  const order = lockOrder(ops);
  const parts: ScriptPart[] = [{ sql: MYSQL_SET_SCRIPT_NOW, values: [] }];
  const partOf: number[] = new Array(ops.length);
  const answer: Answer[] = new Array(ops.length);
  const live = `(expires_at IS NULL OR expires_at > ${NOW})`;
  for (let at = 0; at < order.length; ) {
    const first = ops[order[at]!]!;
    if (first.op === 'put') {
      const values: (string | number | null)[] = [];
      let n = 0;
      for (let i = order[at]; i !== undefined; i = order[at + n]) {
        const put = ops[i]!;
        if (put.op !== 'put') break;
        values.push(put.key, put.value, put.ttlMs ?? null);
        partOf[i] = parts.length;
        answer[i] = 'put';
        n++;
      }
      at += n;
      parts.push({ sql: statements.putRows(n), values });
      continue;
    }
    if (first.op === 'delete') {
      const run = options.returning ? deleteRun(ops, order, at) : 1;
      if (run > 1) {
        const group = order.slice(at, at + run).map((i) => ops[i] as NormalizedWriteOp & { op: 'delete' });
        const keys = group.map((op) => mysqlBytes(op.key)).join(', ');
        const values =
          first.ifValue === undefined
            ? ''
            : ` AND (\`key\`, CAST(value AS BINARY)) IN (${group.map((op) => `(${mysqlBytes(op.key)}, ${mysqlBytes(op.ifValue!)})`).join(', ')})`;
        for (let k = 0; k < run; k++) {
          partOf[order[at + k]!] = parts.length;
          answer[order[at + k]!] = 'returned';
        }
        parts.push({
          sql: `DELETE FROM ${t.records} WHERE \`key\` IN (${keys})${values} AND ${live} RETURNING \`key\``,
          values: [],
        });
        at += run;
        continue;
      }
      partOf[order[at]!] = parts.length;
      answer[order[at]!] = 'affected';
      parts.push(
        first.ifValue === undefined
          ? { sql: statements.delete.text, values: [first.key] }
          : { sql: statements.deleteIf.text, values: [first.key, first.ifValue] },
      );
      at++;
      continue;
    }
    partOf[order[at]!] = parts.length;
    answer[order[at]!] = 'insertId';
    const hold = first.holdUntil ?? 0;
    // A hold at or below 0 is in the past for any store clock: the release ends the lease at once.
    parts.push(
      hold > 0
        ? { sql: statements.release.text, values: [hold, hold, first.key, first.token] }
        : { sql: statements.releaseNow.text, values: [first.key, first.token] },
    );
    at++;
  }
  return { parts, partOf, answer };
}

/**
 * How many ops from `order[at]` on form one grouped DELETE: deletes of one form (all plain or all
 * compare-and-delete) on distinct keys (lock order puts a repeated key right after its first).
 */
function deleteRun(ops: readonly NormalizedWriteOp[], order: readonly number[], at: number): number {
  const first = ops[order[at]!]! as NormalizedWriteOp & { op: 'delete' };
  const compares = first.ifValue !== undefined;
  let n = 1;
  for (let prev = first.key; at + n < order.length; n++) {
    const op = ops[order[at + n]!]!;
    if (op.op !== 'delete' || (op.ifValue !== undefined) !== compares || op.key === prev) break;
    prev = op.key;
  }
  return n;
}

/** The per-op results, in the caller's order, from the results of the script's statements. */
export function mysqlApplied(
  ops: readonly NormalizedWriteOp[],
  script: MysqlApplyScript,
  results: readonly unknown[],
): boolean[] {
  const returned = new Map<number, Set<string>>();
  const deleted = (part: number): Set<string> => {
    let keys = returned.get(part);
    if (!keys) {
      keys = new Set();
      for (const row of (results[part] ?? []) as { key: unknown }[]) keys.add(keyText(row.key));
      returned.set(part, keys);
    }
    return keys;
  };
  return script.answer.map((how, i) => {
    const part = script.partOf[i]!;
    if (how === 'put') return true;
    const header = results[part] as MysqlHeader | undefined;
    if (how === 'affected') return (header?.affectedRows ?? 0) > 0;
    if (how === 'insertId') return Number(header?.insertId ?? 0) > 0;
    return deleted(part).has(ops[i]!.key);
  });
}

/** A VARBINARY key as mysql2 returns it (a Buffer; a string under a caller's typeCast) → its text. */
export function keyText(key: unknown): string {
  return typeof key === 'string' ? key : Buffer.from(key as Uint8Array).toString('utf8');
}
