import { OncelyError } from '../../core/errors.js';
import { redactSecret } from '../../core/redact.js';
import { BaseStore } from '../base.js';
import { LOCK_TABLE, type LockTable } from '../lock-table.js';
import { SCHEMA_STATE, type SchemaState } from '../schema-state.js';
import type {
  Lease,
  LeaseRequest,
  PageClaim,
  StoreCapabilities,
  StoredRecord,
  SweepResult,
} from '../types.js';
import { type NormalizedScan, type NormalizedWriteOp, prefixUpperBound, sortByKey } from '../validate.js';
import type { NormalizedPageOp } from '../validate-page.js';
import type { Dialect, GrantedRow, SqlValue } from './dialect.js';
import { toInt, toLease, toRecord, toText } from './rows.js';
import { sqlSchemaState } from './schema-state.js';
import { shedlockLockTable } from './shedlock/lock-table.js';
import { SharedStatements } from './statements.js';

/**
 * How often `acquire`, `apply` and `sweep` run when the database picks them as a deadlock victim: it rolled
 * the whole statement or transaction back, so running it again is safe.
 */
const ATTEMPTS = 4;

/** The lease a granted row stands for. */
function grantedLease(request: LeaseRequest, row: GrantedRow): Lease {
  return {
    key: request.key,
    owner: request.owner,
    token: toInt(row.token),
    acquiredAt: toInt(row.acquired_at),
    expiresAt: toInt(row.expires_at),
  };
}

/**
 * The one store implementation behind SQLite, PostgreSQL and MySQL/MariaDB, parameterised by a
 * {@link Dialect}. It never reads-then-writes: every race-sensitive call is a single dialect
 * statement or script; the shared code only orders keys, maps rows and classifies errors.
 */
export class SqlStore extends BaseStore {
  /** `sqlite`, `postgres` or `mysql`. */
  readonly kind: string;
  /** What this SQL backend guarantees (see {@link StoreCapabilities}). */
  readonly capabilities: StoreCapabilities;
  /** This backend's statements, driver calls and error codes. */
  protected readonly dialect: Dialect;
  private readonly statements: SharedStatements;
  private readonly secret: readonly string[] | string | undefined;
  /**
   * Where `tryLock`/`withLock` keep named locks when the store has a ShedLock table.
   *
   * @internal
   */
  readonly [LOCK_TABLE]: LockTable | undefined;
  /**
   * Whether the schema exists, looked up without creating anything, where the engine can tell
   * (PostgreSQL, MySQL/MariaDB): for read-only tools, which must not migrate.
   *
   * @internal
   */
  readonly [SCHEMA_STATE]: (() => Promise<SchemaState>) | undefined;

  /** @param secret passwords to redact from every error message (from a connection string). */
  constructor(dialect: Dialect, secret?: string | readonly string[]) {
    super();
    this.dialect = dialect;
    this.kind = dialect.kind;
    this.capabilities = dialect.capabilities;
    this.statements = new SharedStatements(dialect.tables, dialect.syntax);
    this.secret = typeof secret === 'string' ? secret || undefined : secret;
    const { shedlock } = dialect;
    this[LOCK_TABLE] = shedlock
      ? shedlockLockTable(shedlock, (operation, work) =>
          this.call(operation, async () => {
            try {
              // A deadlock victim (MySQL's upsert of a fresh name) was rolled back whole: run it again.
              return operation === 'acquire' ? await this.retrying(work) : await work();
            } catch (err) {
              if (!this.dialect.isSchemaError(err)) throw err;
              const detail = redactSecret(err instanceof Error ? err.message : String(err), this.secret);
              throw new OncelyError(
                'SCHEMA',
                `${this.kind} store: ${operation} failed: ${detail} (ShedLock table ${shedlock.table.given} is missing or changed; store.migrate() creates it)`,
                { cause: err },
              );
            }
          }),
        )
      : undefined;
    const { schemaTables } = dialect;
    this[SCHEMA_STATE] = schemaTables
      ? () => this.call('schemaState', () => sqlSchemaState(dialect, () => schemaTables.call(dialect)))
      : undefined;
  }

  protected override classifyError(err: unknown, operation: string): OncelyError {
    if (err instanceof OncelyError) return err;
    const detail = redactSecret(err instanceof Error ? err.message : String(err), this.secret);
    if (this.dialect.isSchemaError(err)) {
      return new OncelyError(
        'SCHEMA',
        `${this.kind} store: ${operation} failed: ${detail} (the oncely tables with prefix '${this.dialect.tables.prefix}' are missing or changed; store.migrate() creates them)`,
        { cause: err },
      );
    }
    if (this.dialect.isOversize?.(err))
      return new OncelyError(
        'INVALID_ARGUMENT',
        `${this.kind} store: ${operation} failed: the request is larger than the server accepts (${detail}); store less per value or batch, or raise the server's max_allowed_packet`,
        { cause: err },
      );
    return new OncelyError('STORE_UNAVAILABLE', `${this.kind} store: ${operation} failed: ${detail}`, {
      cause: err,
    });
  }

  private async rows(statement: { name: string; text: string }, params: readonly SqlValue[]) {
    return (await this.dialect.query(statement, params)).rows;
  }

  protected async doNow(): Promise<number> {
    const [row] = await this.rows(this.statements.now, []);
    return toInt(row?.['now']);
  }

  protected async doAcquire(requests: readonly LeaseRequest[]): Promise<(Lease | null)[]> {
    const [only] = requests;
    if (requests.length === 1 && only) return [await this.doAcquireOne(only)];
    const sorted = sortByKey([...requests]);
    const granted = await this.retrying(() => this.dialect.acquire(sorted));
    const byKey = new Map(granted.map((row) => [toText(row.key), row]));
    return requests.map((r) => {
      const row = byKey.get(r.key);
      return row ? grantedLease(r, row) : null;
    });
  }

  /** tryLock's path: one key, nothing to order or match up, and no retry frame unless needed. */
  protected override async doAcquireOne(request: LeaseRequest): Promise<Lease | null> {
    let rows: GrantedRow[];
    try {
      rows = await this.dialect.acquire([request]);
    } catch (err) {
      if (!this.dialect.isRetryable(err)) throw err;
      rows = await this.retrying(() => this.dialect.acquire([request]), 2);
    }
    const row = rows[0];
    return row ? grantedLease(request, row) : null;
  }

  protected override acquireOneNow(request: LeaseRequest): Lease | null | undefined {
    if (!this.dialect.acquireNow) return undefined;
    const row = this.dialect.acquireNow(request);
    return row ? grantedLease(request, row) : null;
  }

  protected override releaseNow(key: string, token: number, holdUntil: number): boolean | undefined {
    return this.dialect.releaseNow?.(key, token, holdUntil);
  }

  protected async doExtend(key: string, token: number, leaseMs: number): Promise<number | null> {
    return await this.dialect.extend(key, token, leaseMs);
  }

  protected doRelease(key: string, token: number, holdUntil: number | undefined): Promise<boolean> {
    return this.dialect.release(key, token, holdUntil ?? 0); // the dialect's own promise: no extra await
  }

  protected async doInspect(key: string): Promise<Lease | null> {
    const [row] = await this.rows(this.statements.inspect, [key]);
    return row ? toLease(row) : null;
  }

  protected async doListLeases(prefix: string, limit: number): Promise<Lease[]> {
    const upper = prefixUpperBound(prefix);
    const params: SqlValue[] = upper === undefined ? [prefix, limit] : [prefix, upper, limit];
    return (await this.rows(this.statements.listLeases(upper !== undefined), params)).map(toLease);
  }

  protected async doPut(key: string, value: string, ttlMs: number | undefined): Promise<void> {
    await this.dialect.put(key, value, ttlMs ?? null);
  }

  protected async doGet(key: string): Promise<string | null> {
    const [row] = await this.rows(this.statements.get, [key]);
    return row ? toText(row['value']) : null;
  }

  protected override async doGetMany(keys: readonly string[]): Promise<(string | null)[]> {
    const { statement, params } = this.statements.getMany(keys);
    const found = new Map<string, string>();
    for (const row of await this.rows(statement, params)) found.set(toText(row['key']), toText(row['value']));
    return keys.map((key) => found.get(key) ?? null);
  }

  protected override async doCount(prefix: string): Promise<number> {
    const upper = prefixUpperBound(prefix);
    const params: SqlValue[] = upper === undefined ? [prefix] : [prefix, upper];
    const [row] = await this.rows(this.statements.count(upper !== undefined), params);
    return toInt(row?.['n']);
  }

  protected async doScan(scan: NormalizedScan): Promise<StoredRecord[]> {
    const upper = prefixUpperBound(scan.prefix);
    const params: SqlValue[] = [scan.prefix];
    if (upper !== undefined) params.push(upper);
    if (scan.after !== undefined) params.push(scan.after);
    params.push(scan.limit);
    const statement = this.statements.scan({
      reverse: scan.reverse,
      upper: upper !== undefined,
      after: scan.after !== undefined,
    });
    return (await this.rows(statement, params)).map(toRecord);
  }

  protected async doDelete(key: string): Promise<boolean> {
    return (await this.dialect.query(this.statements.delete, [key])).affected > 0;
  }

  protected override async doApply(ops: readonly NormalizedWriteOp[]): Promise<boolean[]> {
    return this.retrying(() => this.dialect.apply(ops));
  }

  protected override async doClaimPage(
    lease: LeaseRequest,
    ops: readonly NormalizedPageOp[],
  ): Promise<PageClaim> {
    const claim = this.dialect.claimPage;
    if (!claim) return super.doClaimPage(lease, ops);
    const { granted, results } = await this.retrying(() => claim.call(this.dialect, lease, ops));
    return granted
      ? { lease: grantedLease(lease, granted), results }
      : { lease: null, results: ops.map(() => false) };
  }

  protected async doSweep(limit: number): Promise<SweepResult> {
    return this.retrying(() => this.dialect.sweep(limit));
  }

  /** Runs `work` again when the database rolled it back whole as a deadlock victim. */
  private async retrying<T>(work: () => Promise<T>, firstAttempt = 1): Promise<T> {
    for (let attempt = firstAttempt; ; attempt++) {
      try {
        return await work();
      } catch (err) {
        if (attempt >= ATTEMPTS || !this.dialect.isRetryable(err)) throw err;
      }
    }
  }

  protected async doMigrate(): Promise<void> {
    await this.dialect.migrate();
    await this.dialect.shedlock?.migrate();
    if (this.dialect.requestLimit) this.requestLimit = await this.dialect.requestLimit();
  }

  protected async doClose(): Promise<void> {
    await this.dialect.close();
  }
}
