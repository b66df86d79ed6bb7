import { keyComparator, type NormalizedWriteOp } from '../validate.js';

/**
 * The order in which a SQL transaction should run an `apply` batch: records before leases, each
 * by key (code point order, as acquire locks lease rows), and ops on one row in the caller's
 * order (the sort is stable). Returns indexes into `ops`.
 *
 * Why it may reorder: every op writes exactly one row and its result depends only on that row
 * (and the clock), so ops on different rows commute and only the per-row order is observable.
 * Why it should: concurrent batches then lock rows in one global order, so they queue behind each
 * other instead of deadlocking (the retry after a deadlock stays the exception).
 */
export function lockOrder(ops: readonly NormalizedWriteOp[]): number[] {
  const table = (op: NormalizedWriteOp) => (op.op === 'release' ? 1 : 0);
  const compareKeys = keyComparator(ops);
  return ops
    .map((_, i) => i)
    .sort((a, b) => {
      const x = ops[a]!;
      const y = ops[b]!;
      return table(x) - table(y) || compareKeys(x.key, y.key) || a - b;
    });
}
