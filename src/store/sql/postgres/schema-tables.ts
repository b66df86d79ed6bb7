import type { Run, SchemaTables } from '../dialect.js';
import type { Tables } from '../tables.js';

/**
 * Looks for the schema of `t` without creating anything, in one statement: `to_regclass` resolves
 * each table name (bound as a parameter) exactly as the store's statements do — through the
 * search path, an unquoted name folded to lower case — and the catalogue lists the other visible
 * tables that could belong to an oncely store. Reads the catalogue only: no lock on any table.
 */
export async function pgSchemaTables(t: Tables, run: Run): Promise<SchemaTables> {
  const { rows } = await run(
    {
      name: `${t.prefix}schema_tables`,
      text:
        'SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AND to_regclass($3) IS NOT NULL AS present, ' +
        'ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class c ' +
        "WHERE c.relkind IN ('r', 'p') AND c.relname ~ '(meta|leases|records)$' " +
        'AND pg_catalog.pg_table_is_visible(c.oid)) AS names',
    },
    [t.meta, t.leases, t.records],
  );
  const row = rows[0];
  return { present: row?.['present'] === true, names: (row?.['names'] as string[] | undefined) ?? [] };
}
