import type BetterSqlite3 from 'better-sqlite3';
import type { LeaseRequest, StoreCapabilities, SweepResult } from '../../types.js';
import type { NormalizedWriteOp } from '../../validate.js';
import type { NormalizedPageOp } from '../../validate-page.js';
import type { Dialect, GrantedRow, QueryResult, Row, SqlSyntax, SqlValue, Statement } from '../dialect.js';
import { SharedStatements } from '../statements.js';
import type { Tables } from '../tables.js';
import { sqliteAcquire } from './acquire.js';
import { sqliteApply } from './apply.js';
import { sqliteClaimPage } from './claim-page.js';
import { SQLITE_NOW } from './clock.js';
import { Prepared } from './driver.js';
import { sqliteExtend } from './extend.js';
import { sqlitePut } from './put.js';
import { sqliteRelease } from './release.js';
import { sqliteMigrate } from './schema.js';
import { sqliteSweep } from './sweep.js';

export class SqliteDialect implements Dialect {
  readonly kind = 'sqlite';
  readonly capabilities: StoreCapabilities;
  readonly syntax: SqlSyntax = { param: () => '?', key: '"key"', now: SQLITE_NOW };
  readonly acquire: (requests: readonly LeaseRequest[]) => Promise<GrantedRow[]>;
  readonly acquireNow: (request: LeaseRequest) => GrantedRow | null;
  readonly sweep: (limit: number) => Promise<SweepResult>;
  readonly apply: (ops: readonly NormalizedWriteOp[]) => Promise<boolean[]>;
  readonly claimPage: (
    lease: LeaseRequest,
    ops: readonly NormalizedPageOp[],
  ) => Promise<{ granted: GrantedRow | null; results: boolean[] }>;
  private readonly prepared: Prepared;
  private readonly extendStatement: Statement;
  private readonly releaseStatement: Statement;
  private readonly putStatement: Statement;

  constructor(
    private readonly db: BetterSqlite3.Database,
    readonly tables: Tables,
    private readonly ownsDatabase: boolean,
  ) {
    const memory = db.memory;
    this.capabilities = {
      fencing: true,
      durability: memory ? 'memory' : 'disk',
      serverTime: false,
      multiProcess: !memory,
      multiHost: false,
      batchAcquire: true,
      batchApply: true,
      batchGet: true,
      serverCount: true,
      pages: true,
    };
    this.prepared = new Prepared(db);
    ({ acquire: this.acquire, acquireNow: this.acquireNow } = sqliteAcquire(tables, this.prepared));
    this.sweep = sqliteSweep(tables, this.prepared);
    this.extendStatement = sqliteExtend(tables);
    this.releaseStatement = sqliteRelease(tables);
    this.putStatement = sqlitePut(tables);
    const shared = new SharedStatements(tables, this.syntax);
    this.apply = sqliteApply(this.prepared, {
      put: this.putStatement,
      delete: shared.delete,
      deleteIf: shared.deleteIf,
      release: this.releaseStatement,
    });
    this.claimPage = sqliteClaimPage(tables, this.prepared, this.acquireNow);
  }

  async query(statement: Statement, params: readonly SqlValue[]): Promise<QueryResult> {
    const prepared = this.prepared.get(statement);
    const values = params as (string | number | null)[];
    if (prepared.reader) return { rows: prepared.all(...values) as Row[], affected: 0 };
    return { rows: [], affected: prepared.run(...values).changes };
  }

  async extend(key: string, token: number, leaseMs: number): Promise<number | null> {
    const row = this.prepared.get(this.extendStatement).get(leaseMs, key, token) as
      | { expires_at: number }
      | undefined;
    return row ? row.expires_at : null;
  }

  async release(key: string, token: number, holdUntil: number): Promise<boolean> {
    return this.releaseNow(key, token, holdUntil);
  }

  releaseNow(key: string, token: number, holdUntil: number): boolean {
    return this.prepared.get(this.releaseStatement).run(holdUntil, key, token).changes > 0;
  }

  async put(key: string, value: string, ttlMs: number | null): Promise<void> {
    this.prepared.get(this.putStatement).run(key, value, ttlMs);
  }

  async migrate(): Promise<void> {
    sqliteMigrate(this.db, this.tables);
  }

  async close(): Promise<void> {
    if (this.ownsDatabase && this.db.open) this.db.close();
  }

  isSchemaError(err: unknown): boolean {
    // "no such table/column: …", and "table … has no column named …" (an INSERT naming a column
    // that an un-migrated database lacks).
    return err instanceof Error && /no such (table|column)|has no column named/i.test(err.message);
  }

  isRetryable(): boolean {
    return false;
  }
}
