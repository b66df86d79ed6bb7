import type { LeaseRequest, StoreCapabilities, SweepResult } from '../types.js';
import type { NormalizedWriteOp } from '../validate.js';
import type { NormalizedPageOp } from '../validate-page.js';
import type { ShedlockOps } from './shedlock/ops.js';
import type { Tables } from './tables.js';

/**
 * A value bound to a statement parameter: keys and values are strings, times and tokens numbers.
 * Arrays only go to PostgreSQL (`unnest($1::text[])`).
 */
export type SqlValue = string | number | null | readonly string[] | readonly number[];

/**
 * One SQL statement: its text (with the dialect's placeholders) and a name unique per table prefix,
 * under which drivers that support it prepare the statement once per connection.
 */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

/** Runs one statement in one round trip (the signature of {@link Dialect.query}). */
export type Run = (statement: Statement, params: readonly SqlValue[]) => Promise<QueryResult>;

/** A row as a driver returns it: BIGINTs may be strings (pg) and keys buffers (MySQL VARBINARY). */
export type Row = Record<string, unknown>;

export interface QueryResult {
  rows: Row[];
  /** Rows the statement inserted, updated or deleted (0 for a SELECT). */
  affected: number;
}

/** A granted lease row: the key, its new token and its store times. */
export interface GrantedRow {
  key: unknown;
  token: unknown;
  acquired_at: unknown;
  expires_at: unknown;
}

/** The few SQL fragments the shared statements (reads and the plain delete) are written with. */
export interface SqlSyntax {
  /** Placeholder for the n-th (1-based) parameter: `$1` or `?`. */
  param(n: number): string;
  /** The `key` column, quoted for the engine (`key` is reserved in MySQL). */
  readonly key: string;
  /**
   * The store clock in epoch ms as an SQL expression the server evaluates. Shared statements use it
   * once each; statements that need one instant in several places say so in their own file.
   */
  readonly now: string;
  /**
   * For engines that bind a whole list as one array parameter: the right-hand side of
   * `key = …` matching any key of the array bound at placeholder `param` (PostgreSQL:
   * `ANY($1::text[])`). Without it, a key list is bound one placeholder per key (`key IN (?, …)`).
   */
  anyKey?(param: string): string;
  /**
   * A condition that holds exactly when the record's `value` column is the text bound at `param`,
   * code unit for code unit (compare-and-delete). Without it, `value = <param>`, which is exact
   * where the column's collation is (PostgreSQL's deterministic default, SQLite BINARY). MySQL's
   * utf8mb4_bin is PAD SPACE on MariaDB and MySQL 5.7 ('a' = 'a '), so it compares bytes instead.
   */
  sameValue?(param: string): string;
}

/** What a dialect's look at the catalogue found, without DDL (see {@link Dialect.schemaTables}). */
export interface SchemaTables {
  /** The store's leases, records and meta tables all exist, found as its statements find them. */
  readonly present: boolean;
  /**
   * The tables its statements could find (the search path, the current database) whose names end
   * in `meta`, `leases` or `records`: where other oncely prefixes show.
   */
  readonly names: readonly string[];
}

/**
 * What one SQL engine contributes to {@link SqlStore}: its driver glue, SQL fragments, and its own
 * version of every race-sensitive operation (each one statement or one script, in a file of its
 * own under `sql/<engine>/`). Everything else (validation, row mapping, key ordering, reads, error
 * classification) is shared.
 */
export interface Dialect {
  readonly kind: string;
  readonly capabilities: StoreCapabilities;
  readonly tables: Tables;
  readonly syntax: SqlSyntax;
  /** Named locks in ShedLock's table, when the store was opened with `shedlockTable`. */
  readonly shedlock?: ShedlockOps | undefined;
  /** Runs one statement in one round trip. */
  query(statement: Statement, params: readonly SqlValue[]): Promise<QueryResult>;

  /**
   * Grants every key in `requests` that is absent or expired, in one round trip, drawing tokens
   * from the store-wide fence counter. `requests` is non-empty, has distinct keys and is sorted by
   * key in code point order (every caller locks rows in the same order: no deadlocks between
   * batches). Returns the granted rows only.
   */
  acquire(requests: readonly LeaseRequest[]): Promise<GrantedRow[]>;
  /** New `expires_at`, or `null` when `token` no longer holds an unexpired lease on `key`. */
  extend(key: string, token: number, leaseMs: number): Promise<number | null>;
  /** Whether `token` held an unexpired lease on `key` (it then ends at holdUntil, or at once). */
  release(key: string, token: number, holdUntil: number): Promise<boolean>;
  /**
   * For an engine whose driver is synchronous (better-sqlite3): `acquire` of one request and
   * `release`, answered without a promise (the same statements), so a lock cycle awaits less.
   */
  acquireNow?(request: LeaseRequest): GrantedRow | null;
  releaseNow?(key: string, token: number, holdUntil: number): boolean;
  /** Upserts a record; `ttlMs` null = never expires. */
  put(key: string, value: string, ttlMs: number | null): Promise<void>;
  /**
   * Applies a non-empty batch of validated ops in order, each exactly like `put`, the shared
   * delete statement (or, with `ifValue`, the shared compare-and-delete) and `release`, in one
   * round trip and all or nothing. Keys may repeat. Returns one result per op (put → true;
   * delete → a live record (holding `ifValue`, if given) was deleted; release → token held it); a
   * false result changes nothing and fails nothing.
   * May be re-run after an {@link Dialect.isRetryable} error (the whole batch was rolled back).
   */
  apply(ops: readonly NormalizedWriteOp[]): Promise<boolean[]>;
  /**
   * A page claim (present exactly when `capabilities.pages`): grants `lease` as `acquire` would
   * (a token from the fence counter) and, only if granted, applies `ops` (distinct keys; see
   * `Store.claimPage`) in one round trip, all or nothing. Returns the granted row (or `null`, then
   * nothing was applied) and one result per op. May be re-run after an {@link Dialect.isRetryable}
   * error (the whole of it was rolled back).
   */
  claimPage?(
    lease: LeaseRequest,
    ops: readonly NormalizedPageOp[],
  ): Promise<{ granted: GrantedRow | null; results: boolean[] }>;
  sweep(limit: number): Promise<SweepResult>;
  migrate(): Promise<void>;
  /**
   * Whether the schema exists, and the names of tables other oncely stores could own, read from
   * the catalogue without creating or locking anything. Absent: the engine cannot tell (SQLite,
   * whose file is looked at before it is opened); the store is then migrated as before.
   */
  schemaTables?(): Promise<SchemaTables>;
  close(): Promise<void>;

  /** The error says a table, column or sequence is missing, or the schema is newer than ours. */
  isSchemaError(err: unknown): boolean;
  /** The statement was rolled back as a whole (deadlock, serialisation failure) and may be re-run. */
  isRetryable(err: unknown): boolean;
  /**
   * The server refused the request for its size (MySQL/MariaDB `max_allowed_packet`): sending it
   * again cannot help, so it is `INVALID_ARGUMENT`, not an outage. Absent: no such limit.
   */
  isOversize?(err: unknown): boolean;
  /** The largest request the server takes (see BaseStore.requestLimit), read once after migrate. */
  requestLimit?(): Promise<{ bytes: number; setting: string }>;
}
