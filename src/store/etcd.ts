/**
 * `oncely/etcd`: the etcd v3.3+ store, on your `etcd3` client or its own. Needs `etcd3`.
 * `openStore('etcd://…')` loads it for you.
 *
 * @module oncely/etcd
 */
/**
 * etcd backend (the `etcd3` driver; etcd v3.3+ for nested transactions and range compares).
 *
 * Key layout: ./etcd/layout.ts (every key under `<prefix>/`). Each compare-and-act is one etcd
 * transaction (Txn), built in a file of its own under ./etcd/ that says what it compares and why
 * it is atomic; values reach etcd only as bytes in protocol fields.
 *
 * Store clock: etcd has no time API, so the store clock is the wall clock of the first member of
 * the URL that answers, read through the `Date` header of its HTTP endpoint and calibrated to a
 * few ms (./etcd/clock.ts). `now()` is then local: monotonic time plus that offset. A client's own
 * wall clock is never used, so a client whose clock is skewed sees the same expiries as every
 * other; all lease decisions compare times written by that one clock (expiry is a server-side
 * value compare inside the grant transaction, see ./etcd/acquire.ts).
 *
 * Tokens: etcd revisions (store-wide, strictly increasing, never reused) scaled with a fence base
 * that survives a wiped cluster; see ./etcd/layout.ts.
 *
 * Round trips: acquire 1 (a batch), put/delete/get/getMany/count/inspect 1, release/extend 2 (read,
 * then a Txn comparing mod_revision), apply 1, or 2 when it releases leases or compare-and-deletes
 * records, claimPage 1, or 2 when its lease key holds an expired lease, scan/listLeases 1
 * (more only to skip expired entries), sweep 3. etcd limits apply: a transaction is at most
 * --max-request-bytes (1.5 MiB by default), so a 1,000-op apply of large values may be refused.
 */
import type { Etcd3 } from 'etcd3';
import { OncelyError } from '../core/errors.js';
import type { BackendOptions } from './backend-options.js';
import { BaseStore, DEFAULT_CAPABILITIES } from './base.js';
import { loadDriver } from './driver.js';
import { acquireResult, acquireTxn } from './etcd/acquire.js';
import { claimPage } from './etcd/claim-page.js';
import { type EtcdClock, sharedClock } from './etcd/clock.js';
import { classifyEtcdError } from './etcd/errors.js';
import { extendLease } from './etcd/extend.js';
import { Layout } from './etcd/layout.js';
import { collect, countRecords, liveLease, readRecords, scanRecords } from './etcd/reads.js';
import { checkSchemaVersion, etcdSchemaState, SCHEMA_VERSION } from './etcd/schema-state.js';
import { sweepExpired } from './etcd/sweep.js';
import { absent, type EtcdClientLike, get, only, put } from './etcd/txn.js';
import { parseEtcdUrl } from './etcd/url.js';
import { writeBatch } from './etcd/writes.js';
import { SCHEMA_STATE, type SchemaState } from './schema-state.js';
import { checkStoreOptions, onlyWith, timeoutOption } from './store-options.js';
import type {
  Lease,
  LeaseRequest,
  PageClaim,
  StoreCapabilities,
  StoredRecord,
  SweepResult,
} from './types.js';
import { type NormalizedScan, type NormalizedWriteOp, validatePrefix } from './validate.js';
import type { NormalizedPageOp } from './validate-page.js';

export type { EtcdClientLike } from './etcd/txn.js';

/** Every option the constructor knows (anything else is refused, see checkStoreOptions). */
const ETCD_OPTIONS = ['client', 'clockUrls', 'ca', 'url', 'prefix', 'connectTimeoutMs'] as const;

/** What `new EtcdStore(options)` accepts: `client` with `clockUrls` (yours), or `url` (the store's own client). */
export interface EtcdStoreOptions {
  /** An existing `etcd3` client (`new Etcd3(…)`). It stays yours: `close()` never closes it. */
  client?: EtcdClientLike;
  /**
   * With `client`: the members' client URLs (`http://host:2379`, `https://…`) whose HTTP `Date`
   * header is the store clock (the first that answers; see ./etcd/clock.ts).
   */
  clockUrls?: string[];
  /** CA certificate for `https` clock URLs signed by a private CA. */
  ca?: Buffer;
  /** `etcd://[user:password@]host[:port][,host[:port]…]` or `etcds://…` (TLS); the store owns this client. */
  url?: string;
  /** Key prefix, letters/digits/`_` (default `oncely_`); keys are `<prefix>/…`. */
  prefix?: string;
  /** Bound on connecting, on clock probes and on each call (default 10 s). */
  connectTimeoutMs?: number;
}

/**
 * A store on etcd: leases and records are keys, every check-and-write is one transaction, tokens
 * come from etcd revisions, and time from one member's clock.
 *
 * @example
 * import { Etcd3 } from 'etcd3';
 * import { EtcdStore } from 'oncely/etcd';
 * const store = new EtcdStore({ client: new Etcd3({ hosts: 'http://etcd:2379' }), clockUrls: ['http://etcd:2379'] });
 * await store.migrate();
 * const lock = await store.tryLock({ name: 'nightly-report', lockAtMostFor: '10m' });
 */
export class EtcdStore extends BaseStore {
  readonly kind = 'etcd';
  readonly capabilities: StoreCapabilities = {
    ...DEFAULT_CAPABILITIES,
    durability: 'server',
    serverTime: true,
    multiProcess: true,
    multiHost: true,
    batchAcquire: true,
    batchApply: true,
    batchGet: true,
    serverCount: true,
    fencing: true,
    pages: true,
  };

  private readonly client: EtcdClientLike;
  private readonly owned: Etcd3 | undefined;
  private readonly layout: Layout;
  private readonly clock: EtcdClock;
  private readonly secret: string | undefined;
  /** The fence base as stored (decimal text), once read. */
  private base: string | undefined;
  private loadingBase: Promise<void> | undefined;

  constructor(options: EtcdStoreOptions) {
    super();
    // etcd's --max-request-bytes is 1.5 MiB by default; oncely's keys, leases and the gRPC frame
    // come on top of the values, so a little less is taken here.
    this.requestLimit = { bytes: 1_400_000, setting: "etcd's --max-request-bytes, 1.5 MiB by default" };
    checkStoreOptions('EtcdStore', options, ETCD_OPTIONS, ['client', 'url']);
    onlyWith(
      'EtcdStore',
      options,
      'clockUrls',
      'client',
      'with { url } the clock is read from the URL’s hosts',
    );
    this.layout = new Layout(validatePrefix(options.prefix ?? 'oncely_'));
    const timeout = timeoutOption(options.connectTimeoutMs, 'EtcdStore connectTimeoutMs', 10_000);
    if (options.client !== undefined) {
      if (typeof options.client.kv?.txn !== 'function' || typeof options.client.kv.range !== 'function') {
        throw new OncelyError(
          'INVALID_ARGUMENT',
          'EtcdStore `client` must be an etcd3 client (it needs kv.range and kv.txn)',
        );
      }
      const urls = options.clockUrls ?? [];
      if (urls.length === 0 || urls.some((u) => !/^https?:\/\/[^/]+$/.test(u))) {
        throw new OncelyError(
          'INVALID_ARGUMENT',
          'EtcdStore with `client` needs `clockUrls`: the members\' client URLs such as ["http://etcd:2379"] (the store clock is read from them)',
        );
      }
      this.client = options.client;
      this.owned = undefined;
      this.secret = undefined;
      this.clock = sharedClock(urls, timeout, options.ca);
    } else if (options.url !== undefined) {
      const { endpoints, username, password } = parseEtcdUrl(options.url);
      const { Etcd3: Client } = loadDriver<typeof import('etcd3')>('etcd3', 'etcd:');
      const owned = new Client({
        hosts: endpoints,
        dialTimeout: timeout,
        ...(username === undefined ? {} : { auth: { username, password: password ?? '' } }),
        ...(options.ca === undefined ? {} : { credentials: { rootCertificate: options.ca } }),
        // Every call ends within the timeout (a half-open connection included): lease maths needs
        // failures to surface, not to hang past the lease.
        defaultCallOptions: () => ({ deadline: Date.now() + timeout }),
        // A scan page or count may exceed gRPC's 4 MiB default; etcd bounds what it sends itself.
        grpcOptions: { 'grpc.max_receive_message_length': -1 },
      });
      this.client = owned;
      this.owned = owned;
      this.secret = password;
      this.clock = sharedClock(endpoints, timeout, options.ca);
    } else {
      throw new OncelyError(
        'INVALID_ARGUMENT',
        'EtcdStore needs `client` (an etcd3 client) or `url` (etcd://…)',
      );
    }
  }

  /** Calibrates the clock (once per process) and reads the fence base (once per store). */
  private async ready(): Promise<void> {
    await this.clock.ready();
    if (this.base === undefined) await this.loadBase();
  }

  /**
   * Reads the fence base, writing it first (the store time now) when it is missing: one Txn,
   * "absent? put it; read it", so concurrent first uses agree on one base.
   */
  private loadBase(): Promise<void> {
    this.loadingBase ??= (async () => {
      const fence = this.layout.fence;
      const read = get(fence);
      const response = await this.client.kv.txn({
        compare: [absent(fence)],
        success: [put(fence, Buffer.from(String(this.clock.now()))), read],
        failure: [read],
      });
      const kv = only(response.responses[response.succeeded ? 1 : 0]);
      const text = kv?.value.toString('utf8') ?? '';
      if (!/^\d{1,16}$/.test(text)) {
        throw new OncelyError(
          'SCHEMA',
          `etcd store: ${fence.toString()} holds ${JSON.stringify(text)}, not a fence base; is another program using the prefix?`,
        );
      }
      this.base = text;
    })().finally(() => {
      this.loadingBase = undefined;
    });
    return this.loadingBase;
  }

  protected async doNow(): Promise<number> {
    await this.clock.ready();
    return this.clock.now();
  }

  protected async doAcquire(requests: readonly LeaseRequest[]): Promise<(Lease | null)[]> {
    await this.ready();
    for (let attempt = 0; ; attempt++) {
      const now = this.clock.now();
      const base = this.base!;
      const txn = acquireTxn(this.layout, requests, now, base);
      const leases = acquireResult(txn, await this.client.kv.txn(txn), requests, now, base);
      if (leases !== undefined) return leases;
      // The fence base changed under us (the data was wiped): read or re-create it, then retry.
      if (attempt >= 2)
        throw new Error(
          `${this.layout.fence.toString()} keeps changing; is another program using the prefix?`,
        );
      this.base = undefined;
      await this.loadBase();
    }
  }

  protected async doExtend(key: string, token: number, leaseMs: number): Promise<number | null> {
    await this.ready();
    return extendLease(
      this.client,
      this.layout,
      key,
      token,
      leaseMs,
      () => this.clock.now(),
      Number(this.base),
    );
  }

  protected async doRelease(key: string, token: number, holdUntil: number | undefined): Promise<boolean> {
    const [released] = await this.write([{ op: 'release', key, token, holdUntil }]);
    return released!;
  }

  protected async doInspect(key: string): Promise<Lease | null> {
    await this.ready();
    const kv = (await this.client.kv.range({ key: this.layout.lease(key) })).kvs[0];
    return liveLease(this.layout, kv, this.clock.now(), Number(this.base));
  }

  protected async doListLeases(prefix: string, limit: number): Promise<Lease[]> {
    await this.ready();
    const now = this.clock.now();
    const base = Number(this.base);
    return collect(this.client, this.layout.range('lease', prefix), limit, false, (kv) =>
      liveLease(this.layout, kv, now, base),
    );
  }

  protected async doPut(key: string, value: string, ttlMs: number | undefined): Promise<void> {
    await this.write([{ op: 'put', key, value, ttlMs }]);
  }

  protected async doGet(key: string): Promise<string | null> {
    const [value] = await this.doGetMany([key]);
    return value ?? null;
  }

  protected override async doGetMany(keys: readonly string[]): Promise<(string | null)[]> {
    await this.clock.ready();
    return readRecords(this.client, this.layout, keys, this.clock.now());
  }

  protected override async doCount(prefix: string): Promise<number> {
    await this.clock.ready();
    return countRecords(this.client, this.layout, prefix, this.clock.now());
  }

  protected async doScan(scan: NormalizedScan): Promise<StoredRecord[]> {
    await this.clock.ready();
    return scanRecords(this.client, this.layout, scan, this.clock.now());
  }

  protected async doDelete(key: string): Promise<boolean> {
    const [deleted] = await this.write([{ op: 'delete', key, ifValue: undefined }]);
    return deleted!;
  }

  protected override async doApply(ops: readonly NormalizedWriteOp[]): Promise<boolean[]> {
    return this.write(ops);
  }

  /** Every write of records and releases: one batch, retried on conflict (./etcd/writes.ts). */
  private async write(ops: readonly NormalizedWriteOp[]): Promise<boolean[]> {
    await this.ready();
    return writeBatch(this.client, this.layout, ops, () => this.clock.now(), Number(this.base));
  }

  /** A lease and a page of writes in one Txn (two when the lease key holds an expired lease). */
  protected override async doClaimPage(
    lease: LeaseRequest,
    ops: readonly NormalizedPageOp[],
  ): Promise<PageClaim> {
    await this.ready();
    const { client, layout } = this;
    const reloadBase = () => {
      this.base = undefined;
      return this.loadBase();
    };
    const ctx = { client, layout, now: () => this.clock.now(), base: () => this.base!, reloadBase };
    return claimPage({ ...ctx, requestLimit: this.requestLimit! }, lease, ops);
  }

  protected async doSweep(limit: number): Promise<SweepResult> {
    await this.clock.ready();
    return sweepExpired(this.client, this.layout, limit, () => this.clock.now());
  }

  /**
   * Nothing to create: calibrates the clock, writes the schema marker if missing and checks it,
   * and reads (or writes) the fence base. Safe to run concurrently: each write is "if absent".
   */
  protected async doMigrate(): Promise<void> {
    await this.clock.ready();
    const marker = this.layout.schema;
    const read = get(marker);
    const response = await this.client.kv.txn({
      compare: [absent(marker)],
      success: [put(marker, Buffer.from(String(SCHEMA_VERSION))), read],
      failure: [read],
    });
    checkSchemaVersion(
      marker,
      only(response.responses[response.succeeded ? 1 : 0])?.value.toString('utf8') ?? null,
    );
    this.base = undefined;
    await this.loadBase();
  }

  /**
   * Whether the schema marker exists, read without writing it (./etcd/schema-state.ts): for
   * read-only tools, which must not migrate.
   *
   * @internal
   */
  readonly [SCHEMA_STATE] = (): Promise<SchemaState> =>
    this.call('schemaState', () => etcdSchemaState(this.client, this.layout));

  protected async doClose(): Promise<void> {
    this.owned?.close(); // the caller's client stays open
  }

  protected override classifyError(err: unknown, operation: string): OncelyError {
    return classifyEtcdError(err, operation, this.secret);
  }
}

/** `openStore('etcd://…')` entry point: a store that owns its client (connected by `migrate()`). */
export function fromUrl(url: string, options: BackendOptions): EtcdStore {
  return new EtcdStore({ url, prefix: options.prefix, connectTimeoutMs: options.connectTimeoutMs });
}
