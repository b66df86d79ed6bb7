import { isPrefix } from './validate.js';

/**
 * A store's look at whether its schema exists, creating nothing: for read-only tools (the CLI's
 * `status`, `history`, …), which must not migrate a store under a mistyped prefix. Symbol-keyed,
 * so it is not part of the public `Store` contract; a store without it (memory, SQLite, a
 * third-party one) is migrated as before.
 */
export const SCHEMA_STATE = Symbol('oncely.schemaState');

/** What {@link SCHEMA_STATE} found. */
export interface SchemaState {
  /**
   * Oncely's schema exists under the store's prefix (SQL: its tables; Redis, etcd: the schema
   * marker key). A schema newer than this code understands is not a state: it throws `SCHEMA`.
   */
  readonly present: boolean;
  /** Prefixes of the other oncely stores found on the same server (database), sorted. */
  readonly others: readonly string[];
  /** Whether `others` names every one (false: looking further was not cheap, or not allowed). */
  readonly complete: boolean;
  /** What the schema is made of, for messages: `tables` or `keys`. */
  readonly made: 'tables' | 'keys';
}

/** A store that can look for its schema without creating it. */
export interface HasSchemaState {
  readonly [SCHEMA_STATE]?: (() => Promise<SchemaState>) | undefined;
}

/**
 * The valid prefixes among `candidates` other than `own`, sorted and without repeats. A candidate
 * that is no valid prefix (another program's `xmeta` table, `{a-b}schema` key) is not oncely's.
 */
export function otherPrefixes(candidates: Iterable<string>, own: string): string[] {
  const found = new Set<string>();
  for (const p of candidates) if (p !== own && isPrefix(p)) found.add(p);
  return [...found].sort();
}
