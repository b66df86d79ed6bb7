import { OncelyError } from '../../../core/errors.js';
import type { Run, SchemaTables } from '../dialect.js';
import type { Tables } from '../tables.js';

/**
 * Looks for the schema of `t` in the current database without creating anything, in one statement
 * on `information_schema.tables` (no lock on any table). The store's own names are compared here,
 * not by the server: information_schema compares case-insensitively on MariaDB, while table names
 * are case-sensitive unless `lower_case_table_names` is set (then they are stored in lower case).
 * A URL that names no database fails as the migration does there (`STORE_UNAVAILABLE`).
 */
export async function mysqlSchemaTables(t: Tables, run: Run): Promise<SchemaTables> {
  const { rows } = await run(
    {
      name: `${t.prefix}schema_tables`,
      text:
        'SELECT d.db AS db, s.table_name AS t, @@lower_case_table_names AS l ' +
        'FROM (SELECT DATABASE() AS db) AS d LEFT JOIN information_schema.tables AS s ' +
        "ON s.table_schema = d.db AND (s.table_name LIKE '%meta' OR s.table_name LIKE '%leases' OR s.table_name LIKE '%records')",
    },
    [],
  );
  if (rows[0]?.['db'] == null)
    throw new OncelyError(
      'STORE_UNAVAILABLE',
      'mysql store: No database selected (the URL names none: mysql://user:password@host:3306/<database>)',
    );
  const names = rows.flatMap((r) => (r['t'] == null ? [] : [String(r['t'])]));
  const folded = Number(rows[0]?.['l']) !== 0;
  const have = new Set(folded ? names.map((n) => n.toLowerCase()) : names);
  const present = [t.meta, t.leases, t.records].every((n) => have.has(folded ? n.toLowerCase() : n));
  return { present, names };
}
