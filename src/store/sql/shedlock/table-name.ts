import { invalidArgument } from '../../../core/errors.js';
import { describe } from '../../../core/options.js';

/** One identifier: what PostgreSQL and MySQL both take unquoted, at most 63 characters. */
const PART = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** A validated ShedLock table name, quoted for one engine. */
export interface ShedlockTableName {
  /** As the caller gave it (for messages). */
  readonly given: string;
  /** Schema (when qualified) and table, as the engine names them. */
  readonly schema: string | undefined;
  readonly table: string;
  /** The quoted, possibly schema-qualified identifier to splice into SQL text. */
  readonly sql: string;
}

/**
 * Validates `value` as `table` or `schema.table` (each part `[A-Za-z_][A-Za-z0-9_]{0,62}`;
 * anything else is `INVALID_ARGUMENT`) and quotes it as an identifier, so nothing but these
 * characters ever reaches SQL text.
 *
 * ShedLock splices the name into its SQL unquoted, so oncely names the table the way the engine
 * resolves that unquoted name: PostgreSQL folds it to lower case (`ShedLock` is the table
 * `shedlock`), MySQL keeps it as written (its file system decides case, as for ShedLock).
 *
 * @example
 * shedlockTableName('app.shedlock', 'postgres').sql   // "app"."shedlock"
 */
export function shedlockTableName(value: unknown, engine: 'postgres' | 'mysql'): ShedlockTableName {
  const parts = typeof value === 'string' ? value.split('.') : [];
  if (parts.length < 1 || parts.length > 2 || !parts.every((p) => PART.test(p))) {
    throw invalidArgument(
      `shedlockTable must be a table name such as "shedlock" or "my_schema.shedlock" (letters, digits and '_', not starting with a digit, at most 63 each); got ${describe(value)}`,
    );
  }
  const names = engine === 'postgres' ? parts.map((p) => p.toLowerCase()) : parts;
  const quote = engine === 'postgres' ? (p: string) => `"${p}"` : (p: string) => `\`${p}\``;
  return {
    given: value as string,
    schema: names.length === 2 ? names[0] : undefined,
    table: names[names.length - 1]!,
    sql: names.map(quote).join('.'),
  };
}
