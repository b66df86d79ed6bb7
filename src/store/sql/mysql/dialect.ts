import { OncelyError } from '../../../core/errors.js';
import { DEFAULT_CAPABILITIES } from '../../base.js';
import type { LeaseRequest, StoreCapabilities, SweepResult } from '../../types.js';
import type { NormalizedWriteOp } from '../../validate.js';
import type { NormalizedPageOp } from '../../validate-page.js';
import type {
  Dialect,
  GrantedRow,
  QueryResult,
  Row,
  SchemaTables,
  SqlSyntax,
  SqlValue,
  Statement,
} from '../dialect.js';
import type { ShedlockOps } from '../shedlock/ops.js';
import type { ShedlockTableName } from '../shedlock/table-name.js';
import { SharedStatements } from '../statements.js';
import { SCHEMA_VERSION, schemaTooNew, type Tables } from '../tables.js';
import { mysqlAcquireScript, mysqlGranted } from './acquire.js';
import { type MysqlWriteStatements, mysqlApplied, mysqlApplyScript, mysqlWriteStatements } from './apply.js';
import { mysqlClaimPageScript, mysqlLeaseHeld } from './claim-page.js';
import { MYSQL_NOW } from './clock.js';
import {
  acceptsMultipleStatements,
  acceptsReturning,
  coreExecute,
  type MysqlHeader,
  type MysqlPoolLike,
  runScript,
} from './driver.js';
import { mysqlExtend } from './extend.js';
import { mysqlInline } from './literal.js';
import { mysqlPut } from './put.js';
import { MysqlRegrant } from './regrant.js';
import { mysqlRelease, mysqlReleaseNow } from './release.js';
import {
  MYSQL_MIGRATION_LOCK_SECONDS,
  mysqlCreateTables,
  mysqlLockName,
  mysqlMetaTable,
  mysqlReadVersion,
  mysqlUpgrades,
} from './schema.js';
import { mysqlSchemaTables } from './schema-tables.js';
import { mysqlShedlock } from './shedlock/index.js';
import { mysqlSweepScript } from './sweep.js';

/** ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR. */
const SCHEMA_ERRNOS = new Set([1146, 1054]);
/** ER_LOCK_DEADLOCK: InnoDB rolled the whole transaction back. */
const DEADLOCK = 1213;
/** ER_NET_PACKET_TOO_LARGE: a packet over the server's max_allowed_packet. */
const PACKET_TOO_LARGE = 1153;

function errno(err: unknown): number | undefined {
  const n = (err as { errno?: unknown } | null)?.errno;
  return typeof n === 'number' ? n : undefined;
}

export class MysqlDialect implements Dialect {
  readonly kind = 'mysql';
  readonly capabilities: StoreCapabilities = {
    ...DEFAULT_CAPABILITIES,
    batchApply: true,
    batchGet: true,
    serverCount: true,
    pages: true,
  };
  readonly syntax: SqlSyntax = {
    param: () => '?',
    key: '`key`',
    now: MYSQL_NOW,
    // Bytes, not utf8mb4_bin (PAD SPACE: 'a' = 'a '); the parameter converted from whatever
    // character set it arrives in (the connection's, or an inlined literal's utf8mb4) first.
    sameValue: (param) => `CAST(value AS BINARY) = CAST(CONVERT(${param} USING utf8mb4) AS BINARY)`,
  };
  private readonly extendStatement: Statement;
  private readonly releaseStatement: Statement;
  private readonly releaseNowStatement: Statement;
  private readonly putStatement: Statement;
  private readonly regrant: MysqlRegrant;
  /** The single-op deletes (apply of one op): the shared statements, prepared. */
  private readonly deletes: { delete: Statement; deleteIf: Statement };
  /** What apply's scripts reuse, on the script's clock. */
  private readonly writeStatements: MysqlWriteStatements;
  private readonly preparable = new Map<string, boolean>();
  /** The pool's prepared-statement call: around mysql2's promise wrapper where it can (driver.ts). */
  private readonly execute: ((sql: string, values: unknown) => Promise<[unknown, unknown]>) | undefined;
  /** Whether the pool's connections take multi-statement queries; probed once for a caller's pool. */
  private batched: Promise<boolean> | undefined;
  /**
   * Whether the server has INSERT/DELETE … RETURNING (MariaDB 10.5+), which the re-grant, the batch
   * acquire and apply's grouped deletes use; probed once.
   */
  private returning: Promise<boolean> | undefined;
  /** The probe's answer once it came (so `tryLock` does not await a settled promise each time). */
  private returns: boolean | undefined;
  readonly shedlock: ShedlockOps | undefined;

  constructor(
    private readonly pool: MysqlPoolLike,
    readonly tables: Tables,
    private readonly options: {
      ownsPool: boolean;
      multipleStatements?: boolean;
      shedlockTable?: ShedlockTableName;
      /** The pool the migration uses (openStore's: bounded longer, see BoundedMysqlPool); else `pool`. */
      migrationPool?: MysqlPoolLike;
    },
  ) {
    this.extendStatement = mysqlExtend(tables);
    this.releaseStatement = mysqlRelease(tables);
    this.releaseNowStatement = mysqlReleaseNow(tables);
    this.putStatement = mysqlPut(tables);
    this.regrant = new MysqlRegrant(tables);
    this.execute =
      coreExecute(pool) ?? (typeof pool.execute === 'function' ? pool.execute.bind(pool) : undefined);
    const shared = new SharedStatements(tables, this.syntax);
    this.deletes = { delete: shared.delete, deleteIf: shared.deleteIf };
    this.writeStatements = mysqlWriteStatements(tables, this.syntax);
    if (options.multipleStatements !== undefined) this.batched = Promise.resolve(options.multipleStatements);
    this.shedlock =
      options.shedlockTable &&
      mysqlShedlock(options.shedlockTable, tables, {
        exec: this.exec,
        script: async (parts) => runScript(pool, parts, { batched: await this.multi(), transaction: true }),
        query: async (sql) => (await pool.query(sql, []))[0],
      });
  }

  private async multi(): Promise<boolean> {
    if (!this.batched) {
      const probe = acceptsMultipleStatements(this.pool);
      this.batched = probe;
      probe.catch(() => {
        if (this.batched === probe) this.batched = undefined; // probe again next time
      });
    }
    return this.batched;
  }

  /**
   * One statement: as a server-side prepared statement (parsed once per connection, which is most
   * of a short statement's cost) when the pool can, except statements with `LIMIT ?`, which MySQL
   * 8.0.22+ refuses to bind from mysql2's DOUBLE parameters; those go as text, with the values
   * inlined as literals no `sql_mode` can reinterpret (literal.ts), never through mysql2's
   * client-side escaping. Numeric parameters elsewhere are wrapped in CAST(? AS SIGNED) so the
   * arithmetic stays integer.
   */
  private async run(statement: Statement, params: readonly SqlValue[]): Promise<unknown> {
    const [result] = await this.exec(statement, params);
    return result;
  }

  /** {@link run}'s driver call itself, `[result, fields]` (the lock path awaits it directly). */
  private readonly exec = (
    statement: Statement,
    params: readonly SqlValue[],
  ): Promise<[unknown, unknown]> => {
    let prepare = this.preparable.get(statement.name);
    if (prepare === undefined) {
      prepare = this.execute !== undefined && !/\bLIMIT\b/i.test(statement.text);
      this.preparable.set(statement.name, prepare);
    }
    return prepare
      ? this.execute!(statement.text, params)
      : this.pool.query(mysqlInline(statement.text, params), []);
  };

  async query(statement: Statement, params: readonly SqlValue[]): Promise<QueryResult> {
    const result = await this.run(statement, params);
    if (Array.isArray(result)) return { rows: result as Row[], affected: 0 };
    return { rows: [], affected: (result as MysqlHeader).affectedRows };
  }

  private async header(statement: Statement, params: readonly SqlValue[]): Promise<MysqlHeader> {
    return (await this.run(statement, params)) as MysqlHeader;
  }

  private async hasReturning(): Promise<boolean> {
    if (this.returns !== undefined) return this.returns;
    if (!this.returning) {
      const probe = acceptsReturning(this.pool);
      this.returning = probe;
      probe.then(
        (yes) => {
          this.returns = yes;
        },
        () => {
          if (this.returning === probe) this.returning = undefined; // probe again next time
        },
      );
    }
    return this.returning;
  }

  async acquire(requests: readonly LeaseRequest[]): Promise<GrantedRow[]> {
    const [only] = requests;
    if (requests.length === 1 && only) {
      const returning = this.returns ?? (await this.hasReturning());
      const decided = await this.regrant.acquire(only, this.exec, returning);
      if (decided !== undefined) return decided ? [decided] : [];
    }
    const batched = await this.multi();
    const script = { returning: this.returns ?? (await this.hasReturning()) };
    const parts = mysqlAcquireScript(this.tables, requests, script);
    const granted = mysqlGranted(
      requests,
      await runScript(this.pool, parts, { batched, transaction: true }),
      script,
    );
    if (only && requests.length === 1 && granted[0])
      this.regrant.remember(only.key, Number(granted[0].token));
    return granted;
  }

  async extend(key: string, token: number, leaseMs: number): Promise<number | null> {
    const { insertId } = await this.header(this.extendStatement, [leaseMs, key, token]);
    return insertId > 0 ? Number(insertId) : null;
  }

  async release(key: string, token: number, holdUntil: number): Promise<boolean> {
    const [header] =
      holdUntil > 0
        ? await this.exec(this.releaseStatement, [holdUntil, holdUntil, key, token])
        : await this.exec(this.releaseNowStatement, [key, token]);
    return (header as MysqlHeader).insertId > 0;
  }

  async put(key: string, value: string, ttlMs: number | null): Promise<void> {
    await this.run(this.putStatement, [key, value, ttlMs]);
  }

  async apply(ops: readonly NormalizedWriteOp[]): Promise<boolean[]> {
    const [only] = ops;
    if (ops.length === 1 && only) {
      // One statement is atomic on its own: the single-op path (prepared, autocommit).
      if (only.op === 'put') await this.put(only.key, only.value, only.ttlMs ?? null);
      else if (only.op === 'delete' && only.ifValue !== undefined)
        return [(await this.query(this.deletes.deleteIf, [only.key, only.ifValue])).affected > 0];
      else if (only.op === 'delete')
        return [(await this.query(this.deletes.delete, [only.key])).affected > 0];
      else return [await this.release(only.key, only.token, only.holdUntil ?? 0)];
      return [true];
    }
    const batched = await this.multi();
    const returning = this.returns ?? (await this.hasReturning());
    const script = mysqlApplyScript(this.writeStatements, this.tables, ops, { returning });
    return mysqlApplied(
      ops,
      script,
      await runScript(this.pool, script.parts, { batched, transaction: true }),
    );
  }

  async claimPage(
    lease: LeaseRequest,
    ops: readonly NormalizedPageOp[],
  ): Promise<{ granted: GrantedRow | null; results: boolean[] }> {
    const batched = await this.multi();
    const returning = this.returns ?? (await this.hasReturning());
    const script = mysqlClaimPageScript(this.tables, lease, ops, { returning });
    let results: unknown[];
    try {
      results = await runScript(this.pool, script.parts, { batched, transaction: true });
    } catch (err) {
      // The script's guard: the lease is held, and the transaction was rolled back.
      if (mysqlLeaseHeld(err)) return { granted: null, results: ops.map(() => false) };
      throw err;
    }
    return script.read(results);
  }

  async sweep(limit: number): Promise<SweepResult> {
    const batched = await this.multi();
    const [, leases, records] = (await runScript(this.pool, mysqlSweepScript(this.tables, limit), {
      batched,
      transaction: false,
    })) as MysqlHeader[];
    return { leases: leases?.affectedRows ?? 0, records: records?.affectedRows ?? 0 };
  }

  async migrate(): Promise<void> {
    const t = this.tables;
    const conn = await (this.options.migrationPool ?? this.pool).getConnection();
    try {
      const [locked] = await conn.query(
        mysqlInline('SELECT GET_LOCK(?, ?) AS ok', [mysqlLockName(t), MYSQL_MIGRATION_LOCK_SECONDS]),
        [],
      );
      if (Number((locked as Row[])[0]?.['ok']) !== 1) {
        throw new OncelyError(
          'STORE_UNAVAILABLE',
          `mysql store: another process held the migration lock for ${MYSQL_MIGRATION_LOCK_SECONDS} s`,
        );
      }
      try {
        await conn.query(mysqlMetaTable(t));
        const [rows] = await conn.query(mysqlReadVersion(t));
        const found = Number((rows as Row[])[0]?.['value'] ?? 0);
        if (found > SCHEMA_VERSION) throw schemaTooNew(this.kind, found);
        for (const sql of mysqlCreateTables(t)) await conn.query(sql);
        for (const step of mysqlUpgrades(t)) {
          const [found] = await conn.query(step.probe);
          if (((found as Row[]).length === 0) === (step.when === 'missing')) await conn.query(step.sql);
        }
      } finally {
        await conn.query(mysqlInline('SELECT RELEASE_LOCK(?)', [mysqlLockName(t)]), []);
      }
    } finally {
      conn.release();
    }
  }

  /** Reads information_schema only (schema-tables.ts). */
  schemaTables(): Promise<SchemaTables> {
    return mysqlSchemaTables(this.tables, (statement, params) => this.query(statement, params));
  }

  async close(): Promise<void> {
    if (this.options.ownsPool) await this.pool.end?.();
  }

  isSchemaError(err: unknown): boolean {
    return SCHEMA_ERRNOS.has(errno(err) ?? 0);
  }

  isRetryable(err: unknown): boolean {
    return errno(err) === DEADLOCK;
  }

  /**
   * Half of the server's max_allowed_packet, less 64 KiB for the statement around the values:
   * the multi-statement scripts carry values as hex literals (two characters a byte). A store
   * built on a pool without migrate() does not know it: then the server's own refusal (it closes
   * the connection) is what the caller sees.
   */
  async requestLimit(): Promise<{ bytes: number; setting: string }> {
    const { rows } = await this.query(
      { name: 'max_allowed_packet', text: 'SELECT @@max_allowed_packet AS m' },
      [],
    );
    const max = Number(rows[0]?.['m']);
    return {
      bytes: Math.max(1, Math.floor(max / 2) - 65_536),
      setting: `the server's max_allowed_packet is ${max}, and values travel hex-encoded`,
    };
  }

  isOversize(err: unknown): boolean {
    // ER_NET_PACKET_TOO_LARGE, from the server or from mysql2 itself before it sends.
    return (
      errno(err) === PACKET_TOO_LARGE ||
      (err as { code?: unknown } | null)?.code === 'ER_NET_PACKET_TOO_LARGE' ||
      /max_allowed_packet/.test(err instanceof Error ? err.message : '')
    );
  }
}
