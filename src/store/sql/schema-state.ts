import { otherPrefixes, type SchemaState } from '../schema-state.js';
import type { Dialect, SchemaTables } from './dialect.js';
import { SCHEMA_VERSION, schemaTooNew } from './tables.js';

/**
 * Whether the SQL store of `dialect` has its schema, and which other prefixes have one, by reading
 * the catalogue (`schemaTables`, the dialect's: one statement) and, when present, the stored schema version (one more): a
 * version newer than this code's throws `SCHEMA`, as `migrate()` would. Creates nothing.
 */
export async function sqlSchemaState(
  dialect: Dialect,
  schemaTables: () => Promise<SchemaTables>,
): Promise<SchemaState> {
  const t = dialect.tables;
  const { present, names } = await schemaTables();
  const tables = new Set(names);
  const prefixes = names
    .filter((n) => n.endsWith('meta'))
    .map((n) => n.slice(0, -'meta'.length))
    .filter((p) => tables.has(`${p}leases`) && tables.has(`${p}records`));
  if (present) {
    const { rows } = await dialect.query(
      {
        name: `${t.prefix}schema_version`,
        text: `SELECT value FROM ${t.meta} WHERE name = 'schema_version'`,
      },
      [],
    );
    const version = Number(rows[0]?.['value'] ?? 0);
    if (version > SCHEMA_VERSION) throw schemaTooNew(dialect.kind, version);
  }
  return { present, others: otherPrefixes(prefixes, t.prefix), complete: true, made: 'tables' };
}
