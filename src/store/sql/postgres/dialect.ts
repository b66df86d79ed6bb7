import { DEFAULT_CAPABILITIES } from '../../base.js';
import type { LeaseRequest, StoreCapabilities, SweepResult } from '../../types.js';
import type { NormalizedWriteOp } from '../../validate.js';
import type { NormalizedPageOp } from '../../validate-page.js';
import type {
  Dialect,
  GrantedRow,
  QueryResult,
  SchemaTables,
  SqlSyntax,
  SqlValue,
  Statement,
} from '../dialect.js';
import type { ShedlockOps } from '../shedlock/ops.js';
import type { ShedlockTableName } from '../shedlock/table-name.js';
import { SharedStatements } from '../statements.js';
import type { Tables } from '../tables.js';
import { SCHEMA_VERSION, schemaTooNew } from '../tables.js';
import { pgAcquire } from './acquire.js';
import { pgApply } from './apply.js';
import { pgArrayLiteral } from './array-literal.js';
import { pgClaimPage } from './claim-page.js';
import { PG_NOW } from './clock.js';
import { pgExtend } from './extend.js';
import type { PgPoolLike } from './pool.js';
import { pgPut, pgPutStatement } from './put.js';
import { pgRelease, pgReleaseStatement } from './release.js';
import { PG_SCHEMA_TOO_NEW, pgMigration } from './schema.js';
import { pgSchemaTables } from './schema-tables.js';
import { pgShedlock } from './shedlock/index.js';
import { pgSweep } from './sweep.js';

/**
 * The migration's own bound: it waits for the advisory lock behind every other process migrating
 * the same tables (a hundred nodes starting at once), which may take longer than a query should.
 */
const MIGRATION_TIMEOUT_MS = 120_000;

export type { PgPoolLike } from './pool.js';

/** SQLSTATEs meaning the schema is missing or unexpected: undefined table/column/object. */
const SCHEMA_CODES = new Set(['42P01', '42703', '42704', PG_SCHEMA_TOO_NEW]);
/** Deadlock victim, serialisation failure: the statement was rolled back whole. */
const RETRYABLE_CODES = new Set(['40P01', '40001']);

function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export class PostgresDialect implements Dialect {
  readonly kind = 'postgres';
  readonly capabilities: StoreCapabilities = {
    ...DEFAULT_CAPABILITIES,
    batchApply: true,
    batchGet: true,
    serverCount: true,
    pages: true,
  };
  readonly syntax: SqlSyntax = {
    param: (n) => `$${n}`,
    key: '"key"',
    now: PG_NOW,
    anyKey: (param) => `ANY(${param}::text[])`,
  };
  readonly acquire: (requests: readonly LeaseRequest[]) => Promise<GrantedRow[]>;
  readonly extend: (key: string, token: number, leaseMs: number) => Promise<number | null>;
  readonly release: (key: string, token: number, holdUntil: number) => Promise<boolean>;
  readonly put: (key: string, value: string, ttlMs: number | null) => Promise<void>;
  readonly sweep: (limit: number) => Promise<SweepResult>;
  readonly apply: (ops: readonly NormalizedWriteOp[]) => Promise<boolean[]>;
  readonly claimPage: (
    lease: LeaseRequest,
    ops: readonly NormalizedPageOp[],
  ) => Promise<{ granted: GrantedRow | null; results: boolean[] }>;
  readonly shedlock: ShedlockOps | undefined;

  constructor(
    private readonly pool: PgPoolLike,
    readonly tables: Tables,
    private readonly options: { ownsPool: boolean; prepare: boolean; shedlockTable?: ShedlockTableName },
  ) {
    const run = this.query.bind(this);
    this.shedlock = options.shedlockTable && pgShedlock(options.shedlockTable, tables, run, pool);
    this.acquire = pgAcquire(tables, run);
    this.extend = pgExtend(tables, run);
    this.release = pgRelease(tables, run);
    this.put = pgPut(tables, run);
    this.sweep = pgSweep(tables, run);
    this.claimPage = pgClaimPage(tables, run);
    const shared = new SharedStatements(tables, this.syntax);
    this.apply = pgApply(tables, run, this.simple.bind(this), {
      put: pgPutStatement(tables),
      delete: shared.delete,
      deleteIf: shared.deleteIf,
      release: pgReleaseStatement(tables),
    });
  }

  /** A simple-protocol query (no values, no name), which may hold several statements. */
  private async simple(text: string): Promise<readonly { rowCount: number | null }[]> {
    const result: unknown = await this.pool.query({ text });
    return (Array.isArray(result) ? result : [result]) as { rowCount: number | null }[];
  }

  async query(statement: Statement, params: readonly SqlValue[]): Promise<QueryResult> {
    const values = params.map((v) =>
      Array.isArray(v) ? pgArrayLiteral(v as readonly (string | number)[]) : v,
    );
    const result = await this.pool.query(
      this.options.prepare
        ? { name: statement.name, text: statement.text, values }
        : { text: statement.text, values },
    );
    return { rows: result.rows, affected: result.rowCount ?? 0 };
  }

  /**
   * Creates what is missing. A schema that is complete and current is only looked at (two reads,
   * no DDL): `CREATE INDEX IF NOT EXISTS` still takes a SHARE lock on its table, and the migration
   * taking those locks while running stores write leases and records (row locks first, in their
   * own order) deadlocks — every `openStore` next to running nodes would risk it.
   */
  async migrate(): Promise<void> {
    if (await this.current()) return;
    try {
      // No values: pg sends a simple query, which may hold several statements (one transaction).
      await this.pool.query({ text: pgMigration(this.tables), query_timeout: MIGRATION_TIMEOUT_MS });
    } catch (err) {
      if (sqlState(err) !== PG_SCHEMA_TOO_NEW) throw err;
      const { rows } = await this.pool.query({
        text: `SELECT value FROM ${this.tables.meta} WHERE name = 'schema_version'`,
      });
      throw schemaTooNew(this.kind, Number(rows[0]?.['value']));
    }
  }

  /** Whether every object of the schema exists and the stored version is this code's (newer: SCHEMA). */
  private async current(): Promise<boolean> {
    const t = this.tables;
    const names = [t.meta, t.leases, t.records, t.fence, `${t.leases}_sweep_at`, `${t.records}_expires_at`];
    // A schema of an older oncely has the leases index on expires_at (and no sweep_at): not current.
    const { rows: found } = await this.pool.query({
      text:
        `SELECT bool_and(to_regclass(n) IS NOT NULL) AND to_regclass($2) IS NULL AS complete ` +
        `FROM unnest($1::text[]) AS n`,
      values: [names, `${t.leases}_expires_at`],
    });
    if (found[0]?.['complete'] !== true) return false;
    const { rows } = await this.pool.query({
      text: `SELECT value FROM ${t.meta} WHERE name = 'schema_version'`,
    });
    const version = Number(rows[0]?.['value'] ?? 0);
    if (version > SCHEMA_VERSION) throw schemaTooNew(this.kind, version);
    return version === SCHEMA_VERSION;
  }

  /** Reads the catalogue only (schema-tables.ts). */
  schemaTables(): Promise<SchemaTables> {
    return pgSchemaTables(this.tables, (statement, params) => this.query(statement, params));
  }

  async close(): Promise<void> {
    if (this.options.ownsPool) await this.pool.end?.();
  }

  isSchemaError(err: unknown): boolean {
    return SCHEMA_CODES.has(sqlState(err) ?? '');
  }

  isRetryable(err: unknown): boolean {
    return RETRYABLE_CODES.has(sqlState(err) ?? '');
  }
}
