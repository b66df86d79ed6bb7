import type { Row } from '../dialect.js';

/**
 * What oncely needs from a PostgreSQL connection pool: `pg.Pool` (or a `pg.Client`) fits. Queries
 * are sent as `{ name?, text, values? }` configs; `end` is only ever called on a pool we created.
 */
export interface PgPoolLike {
  /** Runs one query, as `pg.Pool.query(config)` does. */
  query(config: {
    text: string;
    values?: unknown[];
    name?: string;
    /** pg's own per-query bound (ms), over the pool's `query_timeout`. */
    query_timeout?: number;
  }): Promise<{
    /** The rows returned. */
    rows: Row[];
    /** The rows the statement touched (`null` when the server does not say). */
    rowCount: number | null;
  }>;
  /** Ends the pool: called only on a pool oncely created itself. */
  end?(): Promise<void>;
}
