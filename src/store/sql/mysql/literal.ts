import { OncelyError } from '../../../core/errors.js';
import type { SqlValue } from '../dialect.js';

/**
 * Values inlined into MySQL/MariaDB SQL text, for every query that is not a server-side prepared
 * statement (multi-statement scripts, their one-by-one fallback, `LIMIT` statements, migrate).
 *
 * Never as a quoted string: how the server reads `'…'` depends on the session (`sql_mode`
 * NO_BACKSLASH_ESCAPES turns mysql2's `\'` into "end of string", ANSI_QUOTES changes `"`, and
 * `character_set_connection` decides what the bytes mean), and a caller's pool may set any of them.
 * Instead:
 * - a string is `_utf8mb4 X'<hex of its UTF-8>'`: only hex digits reach the SQL text, a hex literal
 *   has one meaning in every sql_mode, and the introducer fixes the character set whatever the
 *   connection's is. The literal's collation is coercible (coercibility 4), so a comparison takes
 *   the column's: against the VARBINARY keys it is a byte comparison (case and trailing spaces
 *   count, as with bound parameters) that the primary key serves (EXPLAIN: const/range on PRIMARY);
 *   assigned to a utf8mb4 column it is stored as is;
 * - a number must be a safe integer (validation guarantees it; anything else is an oncely bug) and
 *   is written in decimal, a negative one in parentheses (`x - -1` must never read as `x --1`);
 * - null is NULL. Arrays never go to MySQL.
 *
 * Prepared statements (`execute`) send values in the binary protocol and need none of this.
 */
export function mysqlLiteral(value: SqlValue): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) {
      throw new OncelyError('INTERNAL', `mysql store: cannot write ${value} into SQL (not a safe integer)`);
    }
    return value < 0 ? `(${value})` : String(value);
  }
  if (typeof value === 'string') return `_utf8mb4 X'${Buffer.from(value, 'utf8').toString('hex')}'`;
  throw new OncelyError('INTERNAL', 'mysql store: cannot write an array into SQL');
}

/**
 * A string's UTF-8 bytes as a binary string literal, `X'<hex>'` (no character set): for comparing
 * with `CAST(column AS BINARY)` byte for byte — inside a row constructor list, where a constant
 * lets the server sort the list once and search it, instead of converting every element per row.
 */
export function mysqlBytes(value: string): string {
  return `X'${Buffer.from(value, 'utf8').toString('hex')}'`;
}

/**
 * `sql` with its `?` placeholders replaced, in order, by {@link mysqlLiteral}s of `values`.
 * Invariant: every `?` in oncely's MySQL statement texts is a placeholder (they hold no string
 * literal with a `?`, and names come from the validated table prefix); the count must match.
 */
export function mysqlInline(sql: string, values: readonly SqlValue[]): string {
  const pieces = sql.split('?');
  if (pieces.length !== values.length + 1) {
    throw new OncelyError(
      'INTERNAL',
      `mysql store: ${values.length} values for ${pieces.length - 1} placeholders in ${sql.slice(0, 80)}`,
    );
  }
  let text = pieces[0]!;
  for (let i = 0; i < values.length; i++) text += mysqlLiteral(values[i] as SqlValue) + pieces[i + 1]!;
  return text;
}
