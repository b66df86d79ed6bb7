import { OncelyError } from '../../../core/errors.js';
import type { Row } from '../dialect.js';
import { toText } from '../rows.js';
import type { ShedlockTableName } from './table-name.js';

/** One column of an existing table, as a migration probe reads it. */
export interface ColumnInfo {
  name: string;
  /** The engine's type name, lower case (`timestamp without time zone`, `timestamp`, …). */
  type: string;
  /** The column alone is the table's primary key or a unique key. */
  unique: boolean;
}

/** Columns from probe rows `{ name, type, is_unique }` (MySQL may return names as buffers). */
export function columnsOf(rows: readonly Row[]): ColumnInfo[] {
  return rows.map((row) => ({
    name: toText(row['name']).toLowerCase(),
    type: toText(row['type']).toLowerCase(),
    unique: row['is_unique'] === true || Number(row['is_unique']) === 1,
  }));
}

/**
 * Refuses a table oncely cannot share with ShedLock (`SCHEMA`, saying what to change): a missing
 * column, a `name` that is not unique (every acquirer would insert its own row: two holders), or
 * time columns of a type whose values would not be UTC wall-clock times (`timestamptz` on
 * PostgreSQL converts through the session time zone). `timeTypes` says which types are fine.
 */
export function checkShedlockLayout(
  kind: string,
  table: ShedlockTableName,
  columns: readonly ColumnInfo[],
  timeTypes: RegExp,
  ddl: string,
): void {
  const byName = new Map(columns.map((c) => [c.name, c]));
  const problems: string[] = [];
  for (const column of ['name', 'lock_until', 'locked_at', 'locked_by']) {
    if (!byName.has(column)) problems.push(`column ${column} is missing`);
  }
  if (byName.has('name') && !byName.get('name')!.unique) problems.push('name is not its primary key');
  for (const column of ['lock_until', 'locked_at']) {
    const found = byName.get(column);
    if (found && !timeTypes.test(found.type)) problems.push(`${column} is ${found.type}, not a TIMESTAMP`);
  }
  if (problems.length === 0) return;
  throw new OncelyError(
    'SCHEMA',
    `${kind} store: ShedLock table ${table.given} cannot be shared with ShedLock: ${problems.join('; ')}. ShedLock's layout: ${ddl}`,
  );
}
