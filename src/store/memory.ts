/**
 * `oncely/memory`: a store in the process's memory, for tests and single-process use (`memory:` or
 * `memory:NAME` with `openStore`). Nothing survives the process; it cannot be shared between
 * processes.
 *
 * @module oncely/memory
 */
import { invalidArgument } from '../core/errors.js';
import { checkOptionNames, describe } from '../core/options.js';
import { BaseStore, DEFAULT_CAPABILITIES } from './base.js';
import { SortedKeys } from './memory-keys.js';
import type {
  Lease,
  LeaseRequest,
  PageClaim,
  StoreCapabilities,
  StoredRecord,
  SweepResult,
} from './types.js';
import { compareKeys, type NormalizedScan, type NormalizedWriteOp } from './validate.js';
import type { NormalizedPageOp } from './validate-page.js';

/** The shared state behind one memory space; every `MemoryStore` on the same space sees it. */
interface Space {
  leases: Map<string, Lease>;
  records: Map<string, StoredRecord>;
  /** The keys of `records`, in store order (scans). Changed only with `records`, in the same step. */
  order: SortedKeys;
  fence: number;
}

const spaces = new Map<string, Space>();

function hostClock(): number {
  return performance.timeOrigin + performance.now();
}

function newSpace(): Space {
  return { leases: new Map(), records: new Map(), order: new SortedKeys(), fence: 0 };
}

/** What `new MemoryStore(options)` accepts. */
export interface MemoryStoreOptions {
  /** Name of a space shared by every `MemoryStore` of the process given the same name (default: a private one). */
  space?: string;
  /**
   * The store clock, epoch ms (default: the host clock). The simulator gives its virtual clock;
   * it must never go backwards.
   */
  now?: () => number;
}

/**
 * In-process store for tests and single-process apps. Every operation runs synchronously between
 * two awaits, so it is atomic with respect to every other caller in the process.
 * Clock: `performance.timeOrigin + performance.now()` — the host clock, monotonic, and immune to a
 * patched `Date.now` — or the `now` option's. `apply` runs its whole batch in one synchronous step
 * on one clock reading, so it is atomic (all or nothing: nothing in it can fail once the batch is
 * validated).
 *
 * @example
 * const store = new MemoryStore();            // private space
 * const a = new MemoryStore({ space: 'x' });  // a and b share one space,
 * const b = new MemoryStore({ space: 'x' });  // like two nodes on one server
 */
export class MemoryStore extends BaseStore {
  readonly kind = 'memory';
  readonly capabilities: StoreCapabilities = {
    ...DEFAULT_CAPABILITIES,
    durability: 'memory',
    serverTime: false,
    multiProcess: false,
    multiHost: false,
    batchApply: true,
    batchGet: true,
    serverCount: true,
    pages: true,
  };
  private readonly space: Space;
  private readonly readClock: () => number;

  constructor(options: MemoryStoreOptions = {}) {
    super();
    checkOptionNames('MemoryStore', options, ['space', 'now']);
    if (options.space !== undefined && typeof options.space !== 'string')
      throw invalidArgument(`MemoryStore space must be a string; got ${describe(options.space)}`);
    if (options.now !== undefined && typeof options.now !== 'function')
      throw invalidArgument(
        `MemoryStore now must be a function returning epoch ms; got ${describe(options.now)}`,
      );
    this.readClock = options.now ?? hostClock;
    if (options.space === undefined) {
      this.space = newSpace();
    } else {
      let space = spaces.get(options.space);
      if (!space) {
        space = newSpace();
        spaces.set(options.space, space);
      }
      this.space = space;
    }
  }

  private clock(): number {
    return Math.floor(this.readClock());
  }

  private live(key: string, at: number): Lease | undefined {
    const lease = this.space.leases.get(key);
    return lease && lease.expiresAt > at ? lease : undefined;
  }

  protected async doNow(): Promise<number> {
    return this.clock();
  }

  protected async doAcquire(requests: readonly LeaseRequest[]): Promise<(Lease | null)[]> {
    const now = this.clock();
    return requests.map((r) => this.grant(r, now));
  }

  /** Everything here is synchronous: `tryLock` and its release need no promise of the store's. */
  protected override acquireOneNow(request: LeaseRequest): Lease | null {
    return this.grant(request, this.clock());
  }

  protected override releaseNow(key: string, token: number, holdUntil: number): boolean {
    return this.releaseAt(key, token, holdUntil, this.clock());
  }

  private grant(r: LeaseRequest, now: number): Lease | null {
    if (this.live(r.key, now)) return null;
    const lease: Lease = {
      key: r.key,
      owner: r.owner,
      token: ++this.space.fence,
      acquiredAt: now,
      expiresAt: now + r.leaseMs,
    };
    this.space.leases.set(r.key, lease);
    return { ...lease };
  }

  protected async doExtend(key: string, token: number, leaseMs: number): Promise<number | null> {
    const now = this.clock();
    const lease = this.live(key, now);
    if (!lease || lease.token !== token) return null;
    // Never shortens: a late extend must not cut a release's hold (lockAtLeastFor, "done") short.
    lease.expiresAt = Math.max(lease.expiresAt, now + leaseMs);
    return lease.expiresAt;
  }

  protected async doRelease(key: string, token: number, holdUntil: number | undefined): Promise<boolean> {
    return this.releaseAt(key, token, holdUntil, this.clock());
  }

  private releaseAt(key: string, token: number, holdUntil: number | undefined, now: number): boolean {
    const lease = this.live(key, now);
    if (!lease || lease.token !== token) return false;
    lease.expiresAt = Math.max(now, holdUntil ?? 0);
    return true;
  }

  protected async doInspect(key: string): Promise<Lease | null> {
    const lease = this.live(key, this.clock());
    return lease ? { ...lease } : null;
  }

  protected async doListLeases(prefix: string, limit: number): Promise<Lease[]> {
    const now = this.clock();
    return [...this.space.leases.values()]
      .filter((l) => l.expiresAt > now && l.key.startsWith(prefix))
      .sort((a, b) => compareKeys(a.key, b.key))
      .slice(0, limit)
      .map((l) => ({ ...l }));
  }

  protected async doPut(key: string, value: string, ttlMs: number | undefined): Promise<void> {
    this.putAt(key, value, ttlMs, this.clock());
  }

  private putAt(key: string, value: string, ttlMs: number | undefined, now: number): void {
    const { records } = this.space;
    if (!records.has(key)) this.space.order.add(key);
    records.set(key, { key, value, expiresAt: ttlMs === undefined ? null : now + ttlMs });
  }

  /** Removes the record `key`, expired or not. */
  private remove(key: string): void {
    if (this.space.records.delete(key)) this.space.order.delete(key);
  }

  private liveRecord(key: string, now: number): StoredRecord | undefined {
    const record = this.space.records.get(key);
    return record && (record.expiresAt === null || record.expiresAt > now) ? record : undefined;
  }

  protected async doGet(key: string): Promise<string | null> {
    return this.liveRecord(key, this.clock())?.value ?? null;
  }

  /** One clock reading for the whole batch, between two awaits. */
  protected override async doGetMany(keys: readonly string[]): Promise<(string | null)[]> {
    const now = this.clock();
    return keys.map((key) => this.liveRecord(key, now)?.value ?? null);
  }

  /** Counts in one synchronous pass over the prefix's keys, on one clock reading. */
  protected override async doCount(prefix: string): Promise<number> {
    const now = this.clock();
    let count = 0;
    for (const key of this.space.order.range(prefix, undefined, false)) {
      if (this.liveRecord(key, now)) count++;
    }
    return count;
  }

  /** Walks the prefix's keys in order from where the scan starts, on one clock reading. */
  protected async doScan(scan: NormalizedScan): Promise<StoredRecord[]> {
    const now = this.clock();
    const out: StoredRecord[] = [];
    if (scan.limit <= 0) return out;
    for (const key of this.space.order.range(scan.prefix, scan.after, scan.reverse)) {
      const r = this.liveRecord(key, now);
      if (!r) continue;
      out.push({ ...r });
      if (out.length >= scan.limit) break;
    }
    return out;
  }

  protected async doDelete(key: string): Promise<boolean> {
    return this.deleteAt(key, this.clock());
  }

  private deleteAt(key: string, now: number): boolean {
    const existed = this.liveRecord(key, now) !== undefined;
    this.remove(key);
    return existed;
  }

  /** The whole batch between two awaits, on one clock reading: no other caller sees half of it. */
  protected override async doApply(ops: readonly NormalizedWriteOp[]): Promise<boolean[]> {
    const now = this.clock();
    return ops.map((op) => {
      if (op.op === 'put') {
        this.putAt(op.key, op.value, op.ttlMs, now);
        return true;
      }
      if (op.op === 'delete') {
        // Compare-and-delete: a record that is absent, expired or holds another value stays as is.
        if (op.ifValue !== undefined && this.liveRecord(op.key, now)?.value !== op.ifValue) return false;
        return this.deleteAt(op.key, now);
      }
      return this.releaseAt(op.key, op.token, op.holdUntil, now);
    });
  }

  /** The lease and the whole page between two awaits, on one clock reading (keys are distinct). */
  protected override async doClaimPage(
    request: LeaseRequest,
    ops: readonly NormalizedPageOp[],
  ): Promise<PageClaim> {
    const now = this.clock();
    const lease = this.grant(request, now);
    if (!lease) return { lease: null, results: ops.map(() => false) };
    const results = ops.map((op) => {
      if (op.op !== 'move') {
        if (op.op === 'create' && this.liveRecord(op.key, now)) return false;
        this.putAt(op.key, op.value, op.ttlMs, now);
        return true;
      }
      if (!this.liveRecord(op.from, now)) return false;
      this.remove(op.from);
      this.putAt(op.to, op.value, op.ttlMs, now);
      return true;
    });
    return { lease, results };
  }

  protected async doSweep(limit: number): Promise<SweepResult> {
    const now = this.clock();
    let leases = 0;
    for (const [key, lease] of this.space.leases) {
      if (leases >= limit) break;
      if (lease.expiresAt <= now) {
        this.space.leases.delete(key);
        leases++;
      }
    }
    let records = 0;
    for (const [key, record] of this.space.records) {
      if (records >= limit) break;
      if (record.expiresAt !== null && record.expiresAt <= now) {
        this.remove(key);
        records++;
      }
    }
    return { leases, records };
  }

  protected async doMigrate(): Promise<void> {}

  protected async doClose(): Promise<void> {}
}
