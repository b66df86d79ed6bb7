import type { NormalizedWriteOp } from '../../validate.js';
import type { Statement } from '../dialect.js';
import { lockOrder } from '../lock-order.js';
import type { MysqlHeader, ScriptPart } from './driver.js';

/** The single-op statements a batch reuses, with their parameter orders. */
export interface MysqlWriteStatements {
  /** (key, value, ttlMs) — put.ts. */
  put: Statement;
  /** The put for `n` rows, (key, value, ttlMs) each — put.ts's mysqlPutRows. */
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
}

/**
 * apply (MySQL 8 / MariaDB 10.6+): the single-op put, delete and release statements (a run of
 * puts as one multi-row put), in one
 * transaction sent as one multi-statement query (one round trip, one commit), in lock order
 * (../lock-order.ts: records then leases, by key; one row's ops in the caller's order), values
 * inlined as sql_mode-proof literals (runScript, literal.ts). Without
 * multipleStatements the same statements go one by one on one connection, still inside
 * START TRANSACTION … COMMIT (correct and atomic, but a round trip each).
 *
 * Takes: validated ops. Returns (see {@link mysqlApplied}), per op in the caller's order: put →
 * true; delete → affectedRows > 0 (a live record — with ifValue, one holding exactly that value —
 * was deleted; a DELETE that matches no row is no error, so the script goes on); release →
 * insertId > 0 (the token
 * held an unexpired lease, which now ends at max(now, holdUntil); `LAST_INSERT_ID(expr)` is
 * reported in a statement's own OK packet only when its SET ran, so an earlier release in the
 * batch never leaks into a later one's answer). A batch of one is that statement alone (prepared,
 * autocommit: one statement is atomic on its own).
 *
 * Why it is atomic, all or nothing: START TRANSACTION … COMMIT around statements that each lock
 * the row they touch and re-check token and expiry on its newest version (as the single calls
 * do); an error stops the script before COMMIT and `runScript` rolls the transaction back (a
 * deadlock already rolled all of it back, so the store may run the batch again). Later statements
 * see earlier ones' writes, so a key may repeat. Lock order keeps concurrent batches from
 * deadlocking on each other's rows; should InnoDB still pick a victim (gap locks), it rolls that
 * transaction back whole and the store runs the batch again.
 */
export function mysqlApplyScript(
  statements: MysqlWriteStatements,
  ops: readonly NormalizedWriteOp[],
): { parts: ScriptPart[]; order: number[]; partOf: number[] } {
  const order = lockOrder(ops);
  const parts: ScriptPart[] = [];
  /** Per position in `order`: the part (statement) that carries that op. */
  const partOf: number[] = [];
  for (let at = 0; at < order.length; at++) {
    const op = ops[order[at]!]!;
    if (op.op === 'put') {
      // Puts next to each other in lock order go as one multi-row upsert, its rows in that order:
      // the same rows locked in the same order, one statement to parse instead of one per put
      // (a finishing batch of 1,000 runs has a history record put per run).
      const values: (string | number | null)[] = [];
      let n = 0;
      for (let next = order[at]; next !== undefined; next = order[at + n]) {
        const put = ops[next]!;
        if (put.op !== 'put') break;
        values.push(put.key, put.value, put.ttlMs ?? null);
        partOf.push(parts.length);
        n++;
      }
      at += n - 1;
      parts.push({ sql: n === 1 ? statements.put.text : statements.putRows(n), values });
      continue;
    }
    partOf.push(parts.length);
    if (op.op === 'delete') {
      if (op.ifValue !== undefined)
        parts.push({ sql: statements.deleteIf.text, values: [op.key, op.ifValue] });
      else parts.push({ sql: statements.delete.text, values: [op.key] });
      continue;
    }
    const hold = op.holdUntil ?? 0;
    parts.push({ sql: statements.release.text, values: [hold, hold, op.key, op.token] });
  }
  return { parts, order, partOf };
}

/** The per-op results, in the caller's order, from the OK packets of the script's statements. */
export function mysqlApplied(
  ops: readonly NormalizedWriteOp[],
  script: { order: readonly number[]; partOf: readonly number[] },
  results: readonly unknown[],
): boolean[] {
  const applied: boolean[] = new Array(ops.length).fill(false);
  script.order.forEach((i, at) => {
    const op = ops[i]!;
    const header = results[script.partOf[at]!] as MysqlHeader | undefined;
    if (op.op === 'put') applied[i] = true;
    else if (op.op === 'delete') applied[i] = (header?.affectedRows ?? 0) > 0;
    else applied[i] = Number(header?.insertId ?? 0) > 0;
  });
  return applied;
}
