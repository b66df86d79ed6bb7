import type { NormalizedWriteOp } from '../../validate.js';
import type { Statement } from '../dialect.js';
import type { Prepared } from './driver.js';

/** The single-op statements a batch reuses, with their parameter orders. */
export interface SqliteWriteStatements {
  /** (key, value, ttlMs) — put.ts. */
  put: Statement;
  /** (key) → changes 1 when a live record was deleted — the shared delete statement. */
  delete: Statement;
  /** (key, value) → changes 1 when a live record holding `value` was deleted — the shared deleteIf. */
  deleteIf: Statement;
  /** (holdUntil, key, token) → changes 1 when the token held the lease — release.ts. */
  release: Statement;
}

/**
 * apply (SQLite): the single-op put, delete (or compare-and-delete) and release statements, in order, in one
 * `BEGIN IMMEDIATE` transaction (a batch of one is that statement alone, in autocommit).
 *
 * Takes: validated ops. Returns: per op, put → true; delete/release → whether the statement
 * changed a row (a live record deleted — with ifValue only one holding exactly that value, BINARY
 * collation; a lease still held by the token, now ending at max(now, holdUntil)). A statement
 * that changes nothing is no error: the transaction goes on and commits.
 *
 * Why it is atomic: better-sqlite3 runs the whole transaction synchronously in this process (one
 * "round trip" to the library), holding the database's single write lock from BEGIN IMMEDIATE to
 * COMMIT, so no other connection sees a part of it; any error rolls all of it back. Each statement
 * is exactly the single-op one, so later ops see earlier ones' writes and a release keeps the
 * single release's fencing (token and expiry re-checked under the write lock). Each statement
 * reads the clock itself, as the single calls do.
 */
export function sqliteApply(
  prepared: Prepared,
  statements: SqliteWriteStatements,
): (ops: readonly NormalizedWriteOp[]) => Promise<boolean[]> {
  const one = (op: NormalizedWriteOp): boolean => {
    if (op.op === 'put') {
      prepared.get(statements.put).run(op.key, op.value, op.ttlMs ?? null);
      return true;
    }
    if (op.op === 'delete') {
      if (op.ifValue !== undefined)
        return prepared.get(statements.deleteIf).run(op.key, op.ifValue).changes > 0;
      return prepared.get(statements.delete).run(op.key).changes > 0;
    }
    return prepared.get(statements.release).run(op.holdUntil ?? 0, op.key, op.token).changes > 0;
  };
  const batch = prepared.db.transaction((ops: readonly NormalizedWriteOp[]): boolean[] => ops.map(one));
  return async (ops) => (ops.length === 1 ? [one(ops[0]!)] : batch.immediate(ops));
}
