import { OncelyError } from '../core/errors.js';
import { tryLock } from '../lock/try-lock.js';
import type { Lock, TryLockOptions } from '../lock/types.js';
import { applyOneByOne, checkRequestSize, pageParts } from './base-defaults.js';
import { DEFAULT_CAPABILITIES } from './default-capabilities.js';
import { ACQUIRE_ONE, RELEASE_GRANTED, type TrustedCalls } from './trusted.js';
import type {
  Lease,
  LeaseRequest,
  ListLeasesOptions,
  PageClaim,
  PageOp,
  PutOptions,
  ScanOptions,
  Store,
  StoreCapabilities,
  StoredRecord,
  SweepOptions,
  SweepResult,
  WriteOp,
} from './types.js';
import {
  distinctKeys,
  MAX_SCAN_LIMIT,
  type NormalizedScan,
  type NormalizedWriteOp,
  normalizeListLeases,
  normalizePut,
  normalizeScan,
  normalizeSweep,
  normalizeWriteOps,
  validateCountPrefix,
  validateKey,
  validateLeaseMs,
  validateRequests,
  validateTime,
  validateToken,
  validateValue,
} from './validate.js';
import { type NormalizedPageOp, normalizePageClaim } from './validate-page.js';

export { DEFAULT_CAPABILITIES };

/**
 * Base of every shipped backend. The public methods validate input, refuse calls after `close()`,
 * and turn driver failures into `OncelyError`s; subclasses implement the `do*` methods, which only
 * ever see valid, normalised arguments (an `acquire` batch has distinct keys and is non-empty).
 * Each `do*` method answers exactly what the public method of the same name promises (see
 * {@link Store}), on the store's clock.
 *
 * @example
 * class MyStore extends BaseStore {
 *   readonly kind = 'my-store';
 *   readonly capabilities = { ...DEFAULT_CAPABILITIES, durability: 'disk' as const };
 *   protected async doNow() { return Date.now(); }
 *   // … doAcquire, doExtend, doRelease, doInspect, doListLeases, doPut, doGet, doScan, doDelete,
 *   // doSweep, doMigrate, doClose
 * }
 */
export abstract class BaseStore implements Store, TrustedCalls {
  /** Backend name, e.g. `sqlite`; shown in messages and `oncely status`. */
  abstract readonly kind: string;
  /** What the backend guarantees; start from {@link DEFAULT_CAPABILITIES} and override. */
  abstract readonly capabilities: StoreCapabilities;
  private closed = false;
  /**
   * The largest request the server takes (keys and values of one `put` or `apply`, in UTF-8
   * bytes), with the setting that decides it; `undefined`: no limit worth checking. A request
   * over it is refused here with `INVALID_ARGUMENT`, before it is sent: the server's own refusal
   * looks like an outage (MariaDB closes the connection on a packet over max_allowed_packet; etcd's
   * RESOURCE_EXHAUSTED opens its client's circuit breaker, failing every call for a while), which
   * a caller would retry forever.
   */
  protected requestLimit:
    | {
        /** The largest request, in UTF-8 bytes of its keys and values. */
        bytes: number;
        /** The server setting that decides it, named in the refusal (e.g. `max_allowed_packet`). */
        setting: string;
      }
    | undefined;

  /** Throws `INVALID_ARGUMENT` if a request of these keys and values is over `requestLimit`. */
  private checkSize(operation: string, parts: readonly (string | undefined)[]): void {
    if (this.requestLimit !== undefined) checkRequestSize(this.kind, this.requestLimit, operation, parts);
  }

  /** The store clock, epoch ms ({@link Store.now}). */
  protected abstract doNow(): Promise<number>;
  /** {@link Store.acquire} of a non-empty batch of distinct keys, in one round trip. */
  protected abstract doAcquire(requests: readonly LeaseRequest[]): Promise<(Lease | null)[]>;
  /** {@link Store.extend}: never shortens a lease. */
  protected abstract doExtend(key: string, token: number, leaseMs: number): Promise<number | null>;
  /** {@link Store.release}, with `holdUntil` a whole store time in ms or `undefined`. */
  protected abstract doRelease(key: string, token: number, holdUntil: number | undefined): Promise<boolean>;
  /** {@link Store.inspect}. */
  protected abstract doInspect(key: string): Promise<Lease | null>;
  /** {@link Store.listLeases}, with the default prefix (`''`) and limit filled in. */
  protected abstract doListLeases(prefix: string, limit: number): Promise<Lease[]>;
  /** {@link Store.put}; `ttlMs` `undefined`: never expires. */
  protected abstract doPut(key: string, value: string, ttlMs: number | undefined): Promise<void>;
  /** {@link Store.get}. */
  protected abstract doGet(key: string): Promise<string | null>;
  /** {@link Store.scan}, with every option filled in (`after` may be `undefined`). */
  protected abstract doScan(scan: NormalizedScan): Promise<StoredRecord[]>;
  /** {@link Store.delete}. */
  protected abstract doDelete(key: string): Promise<boolean>;
  /** {@link Store.sweep}: at most `limit` expired leases and `limit` expired records. */
  protected abstract doSweep(limit: number): Promise<SweepResult>;

  /**
   * Applies a validated, non-empty `apply` batch in order. This default runs the ops one by one
   * through `doPut`/`doDelete`/`doRelease`: correct results, but one round trip per op and **not
   * atomic** (a failure leaves the earlier ops applied). It exists so that stores written against
   * the contract before `apply` keep working; such a store should state `batchApply: false`
   * (the {@link DEFAULT_CAPABILITIES} value). Every shipped backend overrides it with one round
   * trip that applies the whole batch or nothing.
   *
   * A compare-and-delete (`ifValue`) is refused before anything is applied: it cannot be built
   * from `doGet` and `doDelete` without a race (a value put between the two would be deleted),
   * so such a store must override `doApply` to offer it.
   */
  protected async doApply(ops: readonly NormalizedWriteOp[]): Promise<boolean[]> {
    return applyOneByOne(this.kind, ops, {
      put: (key, value, ttlMs) => this.doPut(key, value, ttlMs),
      delete: (key) => this.doDelete(key),
      release: (key, token, holdUntil) => this.doRelease(key, token, holdUntil),
    });
  }

  /**
   * The values of `keys` (validated, distinct, non-empty), one per key in order, `null` when absent
   * or expired. This default reads them with parallel `doGet`s: correct, but one round trip per
   * key and each judged at its own instant; a store keeping it should state `batchGet: false`.
   */
  protected async doGetMany(keys: readonly string[]): Promise<(string | null)[]> {
    return Promise.all(keys.map((key) => this.doGet(key)));
  }

  /**
   * How many unexpired records start with `prefix` (validated). This default pages through
   * `doScan` with the cursor until it runs dry: exact for records that do not change while it
   * pages, but one round trip per 10,000 records (`MAX_SCAN_LIMIT`); a store keeping it should state
   * `serverCount: false`.
   */
  protected async doCount(prefix: string): Promise<number> {
    let total = 0;
    let after: string | undefined;
    for (;;) {
      const page = await this.doScan({ prefix, limit: MAX_SCAN_LIMIT, reverse: false, after });
      total += page.length;
      if (page.length < MAX_SCAN_LIMIT) return total;
      after = page[page.length - 1]!.key;
    }
  }

  /**
   * A validated page claim (see `Store.claimPage`), in one round trip and atomically. This
   * default refuses it: a store offering it overrides this and states `pages: true`.
   */
  protected async doClaimPage(_lease: LeaseRequest, _ops: readonly NormalizedPageOp[]): Promise<PageClaim> {
    throw new OncelyError(
      'INVALID_ARGUMENT',
      `the ${this.kind} store does not offer claimPage (capabilities.pages is false)`,
    );
  }

  /** {@link Store.migrate}: creates the schema if missing; safe concurrently. */
  protected abstract doMigrate(): Promise<void>;
  /** {@link Store.close}: called once; closes only what the store opened itself. */
  protected abstract doClose(): Promise<void>;

  /**
   * Maps a driver error to an `OncelyError`. The default calls everything `STORE_UNAVAILABLE`;
   * backends refine it (a missing table is `SCHEMA`). Must not leak secrets into the message.
   */
  protected classifyError(err: unknown, operation: string): OncelyError {
    if (err instanceof OncelyError) return err;
    const message = err instanceof Error ? err.message : String(err);
    return new OncelyError('STORE_UNAVAILABLE', `${this.kind} store: ${operation} failed: ${message}`, {
      cause: err,
    });
  }

  /** Runs one store operation: refused after close(), driver errors mapped by {@link classifyError}. */
  protected async call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    if (this.closed) throw this.closedError(operation);
    try {
      return await run();
    } catch (err) {
      throw this.classifyError(err, operation);
    }
  }

  private closedError(operation: string): OncelyError {
    return new OncelyError('CLOSED', `${this.kind} store: ${operation}() after close()`);
  }

  /**
   * `tryLock`'s acquire of one request that `lockSpec` validated: `doAcquire` without validating
   * again and without `acquire`'s batch bookkeeping; same CLOSED check and error mapping. A store
   * whose `acquire` was replaced (an override, or an object wrapping this one) is asked through
   * that `acquire` instead, so the replacement still sees every call. Written with `then`/`catch`
   * rather than as an async function: every layer a lock cycle awaits costs a microtask.
   *
   * @internal
   */
  [ACQUIRE_ONE](request: LeaseRequest): Promise<Lease | null> {
    if (this.acquire !== BaseStore.prototype.acquire)
      return this.acquire([request]).then((leases) => leases[0] ?? null);
    if (this.closed) return Promise.reject(this.closedError('acquire'));
    let now: Lease | null | undefined;
    try {
      now = this.acquireOneNow(request);
    } catch (err) {
      return Promise.reject(this.classifyError(err, 'acquire'));
    }
    if (now !== undefined) return Promise.resolve(now);
    return this.doAcquireOne(request).catch((err: unknown) => {
      throw this.classifyError(err, 'acquire');
    });
  }

  /**
   * One valid request, as `doAcquire([request])` would answer it; a backend may override it with a
   * shorter path (fewer allocations and awaits on every `tryLock`), never with other semantics.
   */
  protected async doAcquireOne(request: LeaseRequest): Promise<Lease | null> {
    const [lease] = await this.doAcquire([request]);
    return lease ?? null;
  }

  /**
   * For a backend whose driver answers synchronously (better-sqlite3): {@link doAcquireOne}
   * without a promise, or `undefined` when the store has no such path (the default). A lock cycle
   * then awaits once per call instead of once per layer. Throws driver errors, unclassified.
   */
  protected acquireOneNow(_request: LeaseRequest): Lease | null | undefined {
    return undefined;
  }

  /** The synchronous `doRelease` of {@link acquireOneNow}'s backends; `undefined` when there is none. */
  protected releaseNow(_key: string, _token: number, _holdUntil: number): boolean | undefined {
    return undefined;
  }

  /**
   * A `Lock` releasing its own grant (valid key, token and whole-ms holdUntil); see `ACQUIRE_ONE`.
   *
   * @internal
   */
  [RELEASE_GRANTED](key: string, token: number, holdUntil: number): Promise<boolean> {
    if (this.release !== BaseStore.prototype.release) return this.release(key, token, holdUntil);
    if (this.closed) return Promise.reject(this.closedError('release'));
    let now: boolean | undefined;
    try {
      now = this.releaseNow(key, token, holdUntil);
    } catch (err) {
      return Promise.reject(this.classifyError(err, 'release'));
    }
    if (now !== undefined) return Promise.resolve(now);
    return this.doRelease(key, token, holdUntil).catch((err: unknown) => {
      throw this.classifyError(err, 'release');
    });
  }

  async now(): Promise<number> {
    return this.call('now', () => this.doNow());
  }

  async acquire(requests: readonly LeaseRequest[]): Promise<(Lease | null)[]> {
    validateRequests(requests);
    if (requests.length === 0) return [];
    // Repeats of a key in one batch are answered `null` without asking the store: a single
    // statement must not touch the same row twice (PostgreSQL refuses, MySQL would re-evaluate).
    const firstIndex = new Map<string, number>();
    const unique: LeaseRequest[] = [];
    requests.forEach((r, i) => {
      if (!firstIndex.has(r.key)) {
        firstIndex.set(r.key, i);
        unique.push({ key: r.key, owner: r.owner, leaseMs: r.leaseMs });
      }
    });
    const granted = await this.call('acquire', () => this.doAcquire(unique));
    const byKey = new Map<string, Lease | null>(unique.map((r, i) => [r.key, granted[i] ?? null]));
    return requests.map((r, i) => (firstIndex.get(r.key) === i ? (byKey.get(r.key) ?? null) : null));
  }

  async extend(key: string, token: number, leaseMs: number): Promise<number | null> {
    validateKey(key);
    validateToken(token);
    validateLeaseMs(leaseMs);
    return this.call('extend', () => this.doExtend(key, token, leaseMs));
  }

  async release(key: string, token: number, holdUntil?: number): Promise<boolean> {
    validateKey(key);
    validateToken(token);
    const hold = holdUntil === undefined ? undefined : validateTime(holdUntil, 'holdUntil');
    return this.call('release', () => this.doRelease(key, token, hold));
  }

  async inspect(key: string): Promise<Lease | null> {
    validateKey(key);
    return this.call('inspect', () => this.doInspect(key));
  }

  async listLeases(options?: ListLeasesOptions): Promise<Lease[]> {
    const { prefix, limit } = normalizeListLeases(options);
    return this.call('listLeases', () => this.doListLeases(prefix, limit));
  }

  async put(key: string, value: string, options?: PutOptions): Promise<void> {
    validateKey(key);
    validateValue(value);
    const ttl = normalizePut(options);
    this.checkSize('put', [key, value]);
    return this.call('put', () => this.doPut(key, value, ttl));
  }

  async get(key: string): Promise<string | null> {
    validateKey(key);
    return this.call('get', () => this.doGet(key));
  }

  async getMany(keys: readonly string[]): Promise<(string | null)[]> {
    const distinct = distinctKeys(keys);
    if (distinct.length === 0) return [];
    // A repeated key is read once and answered from that one read, so it cannot get two answers.
    const values = await this.call('getMany', () => this.doGetMany(distinct));
    const byKey = new Map(distinct.map((key, i) => [key, values[i] ?? null]));
    return keys.map((key) => byKey.get(key) ?? null);
  }

  async count(prefix: string): Promise<number> {
    const checked = validateCountPrefix(prefix);
    return this.call('count', () => this.doCount(checked));
  }

  async scan(prefix: string, options?: ScanOptions): Promise<StoredRecord[]> {
    const scan = normalizeScan(prefix, options);
    return this.call('scan', () => this.doScan(scan));
  }

  async delete(key: string): Promise<boolean> {
    validateKey(key);
    return this.call('delete', () => this.doDelete(key));
  }

  async apply(ops: readonly WriteOp[]): Promise<boolean[]> {
    const normalized = normalizeWriteOps(ops);
    if (normalized.length === 0) return [];
    if (this.requestLimit !== undefined)
      this.checkSize(
        'apply',
        normalized.flatMap((op) => [
          op.key,
          op.op === 'put' ? op.value : op.op === 'delete' ? op.ifValue : undefined,
        ]),
      );
    return this.call('apply', () => this.doApply(normalized));
  }

  async claimPage(lease: LeaseRequest, ops: readonly PageOp[]): Promise<PageClaim> {
    const normalized = normalizePageClaim(lease, ops);
    if (this.requestLimit !== undefined) this.checkSize('claimPage', pageParts(normalized));
    const request = { key: lease.key, owner: lease.owner, leaseMs: lease.leaseMs };
    return this.call('claimPage', () => this.doClaimPage(request, normalized));
  }

  async sweep(options?: SweepOptions): Promise<SweepResult> {
    const limit = normalizeSweep(options);
    return this.call('sweep', () => this.doSweep(limit));
  }

  async migrate(): Promise<void> {
    return this.call('migrate', () => this.doMigrate());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.doClose();
    } catch (err) {
      throw this.classifyError(err, 'close');
    }
  }

  /** Closes the store: `await using store = …` calls it at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  tryLock(options: TryLockOptions): Promise<Lock | null> {
    return tryLock(this, options); // tryLock's own promise: no extra await on every call
  }
}
