/**
 * `oncely/redis`: the Redis 6.2+ store, on your ioredis client (`Redis` or `Cluster`) or its own.
 * Needs `ioredis`. `openStore('redis://…')` loads it for you. Server settings it relies on:
 * docs/redis.md.
 *
 * @module oncely/redis
 */
/**
 * Redis backend (ioredis). Requires Redis 6.2+ (SET … PXAT); see docs/redis.md for the server
 * settings it relies on (maxmemory-policy noeviction, persistence, replication).
 *
 * Key layout — every key of one store starts with the hash tag `{<prefix>}` (the "base"), so all
 * of them live in one Redis Cluster slot and every script may touch any of them:
 *
 *   {p}fence        INCR counter for fencing tokens; never expires, never swept. Seeded with
 *                   TIME in µs when missing, so tokens still grow after a data loss.
 *   {p}lease:<key>  string "expiresAt|token|acquiredAt|owner", PXAT expiresAt
 *   {p}leases       sorted set, score 0, member <key>: key-ordered index for listLeases
 *   {p}lease-exp    sorted set, score expiresAt, member <key>: bounded sweep
 *   {p}rec:<key>    hash { v: value, e?: expiresAt }, PXAT expiresAt when it has a ttl
 *   {p}recs         sorted set, score 0: key-ordered index for scan
 *   {p}rec-exp      sorted set, score expiresAt (records with a ttl only): bounded sweep
 *   {p}schema       schema version marker ("1"), written by migrate()
 *
 * Why one hash tag: acquire draws from `fence` and writes the indexes with the lease, so in a
 * cluster they must share a slot; the price is that one store's data is served by one shard (a
 * lock service's data is small). Scripts receive only the base as KEYS[1] and build the other
 * names from it, which keeps a client `keyPrefix` working and keeps every key in the base's slot
 * (Redis Cluster routes the call by KEYS[1] and accepts undeclared keys of the same slot in a
 * script without `#!lua` flags; a store's data cannot be spread over shards, by design).
 *
 * Every store call is one EVALSHA (EVAL after a NOSCRIPT): every compare-and-act is a Lua script
 * under ./redis/ (one file each, saying its KEYS/ARGV, what it returns and why it is atomic).
 * Store time is Redis `TIME`, read inside the script that acts on it, never the caller's clock.
 *
 * Index trade-off: listLeases and scan need key order and a bounded page; SCAN MATCH gives
 * neither (unordered, walks the whole keyspace), so each space keeps a lexicographic sorted set
 * (all scores 0) next to an expiry sorted set that bounds sweep. On the lock hot path this costs
 * one ZADD per grant (the expiry score, with LT: a re-taken name's entry is only looked up; the
 * lexicographic entry only for a name never seen before) and nothing per release: a released lease's index entries stay until sweep or a
 * listLeases walk removes them, and the next grant of that name reuses them. Acquire is then
 * TIME, GET, INCR, SET, ZADD and release GET, TIME, DEL, inside one EVALSHA each.
 *
 * `apply` is one EVALSHA for the whole batch (./redis/apply.lua.ts), running the same Lua functions
 * as put, delete and release; it is atomic, all or nothing (see the script's header for how it
 * stays so without rollback). `claimPage` is one EVALSHA too: acquire's lease grant and the page's
 * writes, batched per page (./redis/claim-page.lua.ts).
 *
 * `getMany` is one read-only EVALSHA: it reads the record hashes as get does. `count` answers from
 * the two record indexes (ZLEXCOUNT over `recs` minus the expired entries of `rec-exp`) in one
 * EVALSHA, walking entries only when a prefix meets unswept expired records; each script walks at
 * most 1,000, so a long walk is several calls, or a few bounded sweeps first (see
 * ./redis/count.lua.ts for why that is exact and what it costs).
 */
import type { Redis } from 'ioredis';
import { OncelyError } from '../core/errors.js';
import { redactSecret } from '../core/redact.js';
import type { BackendOptions } from './backend-options.js';
import { BaseStore, DEFAULT_CAPABILITIES } from './base.js';
import { loadDriver } from './driver.js';
import { claimPage } from './redis/claim-page.js';
import type { RedisClientLike, RedisStoreOptions } from './redis/client.js';
import { countRecords } from './redis/count.js';
import { checkRedisOptions } from './redis/options.js';
import { scanRecords } from './redis/scan.js';
import { checkSchemaVersion, redisSchemaState, SCHEMA_VERSION } from './redis/schema-state.js';
import type { LuaScript } from './redis/script.js';
import { SCRIPTS } from './redis/scripts.js';
import { checkServer, hintFor, readInfo } from './redis/server.js';
import { parseRedisUrl } from './redis/url.js';
import { SCHEMA_STATE, type SchemaState } from './schema-state.js';
import type {
  Lease,
  LeaseRequest,
  PageClaim,
  StoreCapabilities,
  StoredRecord,
  SweepResult,
} from './types.js';
import { type NormalizedScan, type NormalizedWriteOp, prefixUpperBound } from './validate.js';
import type { NormalizedPageOp } from './validate-page.js';

export type { RedisClientLike, RedisStoreOptions } from './redis/client.js';

/**
 * A store on Redis: leases are keys with PXAT expiry, tokens come from one INCR counter, and
 * every check-and-write is one Lua script on the server's clock.
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { RedisStore } from 'oncely/redis';
 * const store = new RedisStore({ client: new Redis(process.env.REDIS_URL!) });
 * await store.migrate();
 * const lock = await store.tryLock({ name: 'nightly-report', lockAtMostFor: '10m' });
 */
export class RedisStore extends BaseStore {
  readonly kind = 'redis';
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
  /** The server's `redis_version`, once `migrate()` could read it. */
  serverVersion: string | undefined;
  /**
   * Server settings `migrate()` found risky for locks (eviction policy, no persistence, a
   * replica), as sentences; recorded, not thrown: the store still works. See docs/redis.md.
   */
  readonly warnings: string[] = [];

  private readonly client: RedisClientLike;
  /** Set when this store created the client (from a URL) and must close it. */
  private readonly owned: Redis | undefined;
  private readonly base: string;
  private readonly secret: string | undefined;
  private connecting: Promise<void> | undefined;
  private lastConnectionError: Error | undefined;

  constructor(options: RedisStoreOptions) {
    super();
    const checked = checkRedisOptions(options);
    this.base = `{${checked.prefix}}`;
    if ('client' in checked) {
      this.client = checked.client;
      this.owned = undefined;
      this.secret = undefined;
    } else {
      const { redisOptions, password } = parseRedisUrl(checked.url, checked.connectTimeoutMs);
      const { Redis: Client } = loadDriver<typeof import('ioredis')>('ioredis', 'redis:');
      const owned = new Client(redisOptions);
      // Without a listener ioredis prints every connection error; remember the last one instead,
      // so a failed connect reports its cause rather than "Connection is closed.".
      owned.on('error', (err: Error) => {
        this.lastConnectionError = err;
      });
      this.client = owned;
      this.owned = owned;
      this.secret = password;
    }
  }

  /** One EVALSHA; EVAL only when the server does not know the script yet (restart, SCRIPT FLUSH). */
  private async run(script: LuaScript, args: (string | number)[]): Promise<unknown> {
    try {
      return await this.client.call('evalsha', script.sha, 1, this.base, ...args);
    } catch (err) {
      return this.evalAfter(err, script, args);
    }
  }

  /** The EVAL that follows a NOSCRIPT answer to `script`'s EVALSHA; any other error is rethrown. */
  private evalAfter(err: unknown, script: LuaScript, args: (string | number)[]): Promise<unknown> {
    if (!(err instanceof Error && err.message.startsWith('NOSCRIPT'))) throw err;
    return this.client.call('eval', script.source, 1, this.base, ...args);
  }

  /** tryLock's acquire: the batch script for one key, called without `run`'s extra await. */
  protected override async doAcquireOne(r: LeaseRequest): Promise<Lease | null> {
    const { sha } = SCRIPTS.acquire;
    let reply: number[];
    try {
      reply = (await this.client.call('evalsha', sha, 1, this.base, r.key, r.owner, r.leaseMs)) as number[];
    } catch (err) {
      reply = (await this.evalAfter(err, SCRIPTS.acquire, [r.key, r.owner, r.leaseMs])) as number[];
    }
    const [now, token] = reply as [number, number];
    return token ? { key: r.key, owner: r.owner, token, acquiredAt: now, expiresAt: now + r.leaseMs } : null;
  }

  protected async doNow(): Promise<number> {
    return (await this.run(SCRIPTS.now, [])) as number;
  }

  protected async doAcquire(requests: readonly LeaseRequest[]): Promise<(Lease | null)[]> {
    const args: (string | number)[] = [];
    for (const r of requests) args.push(r.key, r.owner, r.leaseMs);
    const reply = (await this.run(SCRIPTS.acquire, args)) as number[];
    const now = reply[0]!;
    return requests.map((r, i) => {
      const token = reply[i + 1];
      return token
        ? { key: r.key, owner: r.owner, token, acquiredAt: now, expiresAt: now + r.leaseMs }
        : null;
    });
  }

  protected async doExtend(key: string, token: number, leaseMs: number): Promise<number | null> {
    return (await this.run(SCRIPTS.extend, [key, token, leaseMs])) as number | null;
  }

  protected async doRelease(key: string, token: number, holdUntil: number | undefined): Promise<boolean> {
    const hold = holdUntil ?? 0;
    try {
      return (await this.client.call('evalsha', SCRIPTS.release.sha, 1, this.base, key, token, hold)) === 1;
    } catch (err) {
      return (await this.evalAfter(err, SCRIPTS.release, [key, token, hold])) === 1;
    }
  }

  protected async doInspect(key: string): Promise<Lease | null> {
    const reply = (await this.run(SCRIPTS.inspect, [key])) as [number, number, number, string] | null;
    if (reply === null) return null;
    const [token, acquiredAt, expiresAt, owner] = reply;
    return { key, owner, token, acquiredAt, expiresAt };
  }

  protected async doListLeases(prefix: string, limit: number): Promise<Lease[]> {
    const upper = prefixUpperBound(prefix);
    const reply = (await this.run(SCRIPTS.listLeases, [
      prefix === '' ? '-' : `[${prefix}`,
      upper === undefined ? '+' : `(${upper}`,
      limit,
    ])) as (string | number)[];
    const leases: Lease[] = [];
    for (let i = 0; i < reply.length; i += 5) {
      leases.push({
        key: reply[i] as string,
        token: reply[i + 1] as number,
        acquiredAt: reply[i + 2] as number,
        expiresAt: reply[i + 3] as number,
        owner: reply[i + 4] as string,
      });
    }
    return leases;
  }

  protected async doPut(key: string, value: string, ttlMs: number | undefined): Promise<void> {
    await this.run(SCRIPTS.put, [key, value, ttlMs ?? 0]);
  }

  protected async doGet(key: string): Promise<string | null> {
    return (await this.run(SCRIPTS.get, [key])) as string | null;
  }

  protected override async doGetMany(keys: readonly string[]): Promise<(string | null)[]> {
    return (await this.run(SCRIPTS.getMany, [...keys])) as (string | null)[];
  }

  protected override async doCount(prefix: string): Promise<number> {
    return countRecords((script, args) => this.run(script, args), prefix);
  }

  protected async doScan(scan: NormalizedScan): Promise<StoredRecord[]> {
    return scanRecords((script, args) => this.run(script, args), scan);
  }

  protected async doDelete(key: string): Promise<boolean> {
    return (await this.run(SCRIPTS.delete, [key])) === 1;
  }

  protected override async doApply(ops: readonly NormalizedWriteOp[]): Promise<boolean[]> {
    const args: (string | number)[] = [];
    for (const op of ops) {
      if (op.op === 'put') args.push('p', op.key, op.value, op.ttlMs ?? 0);
      else if (op.op === 'delete' && op.ifValue !== undefined) args.push('c', op.key, op.ifValue, '');
      else if (op.op === 'delete') args.push('d', op.key, '', '');
      else args.push('r', op.key, op.token, op.holdUntil ?? 0);
    }
    const reply = (await this.run(SCRIPTS.apply, args)) as number[];
    return ops.map((_, i) => reply[i] === 1);
  }

  protected override doClaimPage(lease: LeaseRequest, ops: readonly NormalizedPageOp[]): Promise<PageClaim> {
    return claimPage((script, args) => this.run(script, args), lease, ops);
  }

  protected async doSweep(limit: number): Promise<SweepResult> {
    const [leases, records] = (await this.run(SCRIPTS.sweep, [limit])) as [number, number];
    return { leases, records };
  }

  /**
   * Nothing to create: connects (for a store made from a URL), checks the server version,
   * records risky settings in `warnings`, and writes the schema marker.
   */
  protected async doMigrate(): Promise<void> {
    await this.connect();
    await this.checkDatabase();
    const info = await readInfo(this.client, this.warnings);
    if (info !== undefined) {
      this.serverVersion = info.get('redis_version');
      checkServer(info, this.warnings);
    }
    const marker = `${this.base}schema`;
    await this.client.call('set', marker, String(SCHEMA_VERSION), 'NX');
    checkSchemaVersion(this.base, (await this.client.call('get', marker)) as string | null);
  }

  /**
   * Whether the schema marker exists, read without writing it (./redis/schema-state.ts): for
   * read-only tools, which must not migrate. Connects like `migrate()`.
   *
   * @internal
   */
  readonly [SCHEMA_STATE] = (): Promise<SchemaState> =>
    this.call('schemaState', async () => {
      await this.connect();
      await this.checkDatabase();
      return redisSchemaState(this.client, this.base, this.owned !== undefined);
    });

  /**
   * The URL's database number must exist on the server: ioredis reports a refused SELECT only as an
   * 'error' event and stays on database 0, where this store would then share keys with whatever
   * else uses database 0. Selecting it again here (a no-op when it was selected) makes it an answer.
   */
  private async checkDatabase(): Promise<void> {
    const db = this.owned?.options.db ?? 0;
    if (db === 0) return;
    try {
      await this.client.call('select', db);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (!/DB index/i.test(message)) throw err;
      throw new OncelyError(
        'INVALID_ARGUMENT',
        `redis store: database ${db} of the store URL does not exist on this server (${message}); use a number below the server's "databases" setting (16 by default)`,
        { cause: err },
      );
    }
  }

  /** Opens the connection of a store made from a URL, once; rejects with the real cause. */
  private async connect(): Promise<void> {
    const owned = this.owned;
    if (owned === undefined || owned.status === 'ready') return;
    if (this.connecting === undefined) {
      if (owned.status !== 'wait') return; // reconnecting on its own; commands wait or fail fast
      this.connecting = owned.connect().catch((err: unknown) => {
        this.connecting = undefined;
        const cause = this.lastConnectionError ?? err;
        throw cause instanceof Error ? cause : new Error(String(cause));
      });
    }
    await this.connecting;
  }

  protected async doClose(): Promise<void> {
    const owned = this.owned;
    if (owned === undefined) return; // the caller's client stays open
    if (owned.status === 'ready') {
      // QUIT lets in-flight replies arrive; never wait more than a second for it.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        owned.quit().catch(() => {}),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, 1000);
        }),
      ]);
      clearTimeout(timer);
    }
    owned.disconnect();
  }

  protected override classifyError(err: unknown, operation: string): OncelyError {
    if (err instanceof OncelyError) return err;
    const message = redactSecret(err instanceof Error ? err.message : String(err), this.secret);
    const hint = hintFor(message);
    const code = message.startsWith('WRONGTYPE') ? 'SCHEMA' : 'STORE_UNAVAILABLE';
    return new OncelyError(code, `redis store: ${operation} failed: ${message}${hint ? ` (${hint})` : ''}`, {
      cause: err,
    });
  }
}

/**
 * `openStore('redis://…')` entry point: a store that owns its client (created lazily, connected by
 * `migrate()`).
 */
export function fromUrl(url: string, options: BackendOptions): RedisStore {
  return new RedisStore({ url, prefix: options.prefix, connectTimeoutMs: options.connectTimeoutMs });
}
