import { OncelyError } from '../../core/errors.js';
import { tryLock } from '../../lock/try-lock.js';
import type { Lock, TryLockOptions } from '../../lock/types.js';
import { MemoryStore } from '../../store/memory.js';
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
} from '../../store/types.js';
import type { Rng } from './random.js';
import type { NodeClock, VirtualTime } from './virtual-time.js';

/** Store time of virtual time 0 (2030-03-17T17:46:40Z): fire times print relative to it. */
export const EPOCH = 1_900_000_000_000;

/** How one node's connection to the store misbehaves. */
export interface LinkFaults {
  /** One-way delay of a request, and of its reply, each drawn from [min, max] / 2. */
  latencyMs: [number, number];
  /** A request that never reaches the store: the caller gets STORE_UNAVAILABLE after `timeoutMs`. */
  lostRequestRate: number;
  /** The store applies the call, but its reply is lost: STORE_UNAVAILABLE after `timeoutMs`. */
  lostReplyRate: number;
  /** The driver's time-out for a call whose reply does not come. */
  timeoutMs: number;
  /** Until this virtual time the rates above apply (then the network heals). */
  faultsUntil: number;
  /** Periods [from, to) in virtual ms when nothing gets through (requests or replies). */
  partitions: [number, number][];
}

/** What the network did, for the trace (only what can change an outcome is reported). */
export type NetEvent = (what: string) => void;

/** Sees what the server applied and granted, when it did (the checker judges by it). */
export interface StoreObserver {
  /**
   * A write batch applied, with its results; `notHeld`: the page tokens (of `pageLeasesOf`) whose
   * page lease the server did not hold for them just before it applied the batch.
   */
  applied(ops: readonly WriteOp[], results: readonly boolean[], notHeld: ReadonlySet<number>): void;
  /** The page leases this batch writes outcomes under, to be looked up on the server first. */
  pageLeasesOf(ops: readonly WriteOp[]): { key: string; token: number }[];
  /** A page claim answered. */
  claimed(lease: LeaseRequest, ops: readonly PageOp[], claim: PageClaim): void;
  /** Leases granted (or refused: `null`) by an acquire. */
  granted(leases: readonly (Lease | null)[]): void;
}

/**
 * The one store server of a simulation: a real `MemoryStore` (the lease and record semantics the
 * scheduler relies on, fencing counter included) whose clock is virtual time.
 */
export function simServer(time: VirtualTime): MemoryStore {
  return new MemoryStore({ now: () => EPOCH + time.now });
}

/** The store clock of a simulation: epoch ms on virtual time. */
export function storeClock(time: VirtualTime): () => number {
  return () => EPOCH + time.now;
}

/** Summary of a call for the trace: its name and first key. */
function describeCall(op: string, args: readonly unknown[]): string {
  const first = args[0];
  if (Array.isArray(first)) {
    const items = first as (WriteOp | LeaseRequest)[];
    const keys = items.map((i) => ('op' in i ? `${i.op} ${i.key}` : i.key));
    return `${op}[${keys.slice(0, 3).join(', ')}${keys.length > 3 ? `, +${keys.length - 3}` : ''}]`;
  }
  return typeof first === 'string' ? `${op} ${first}` : op;
}

/**
 * One node's view of the store server: every call crosses a simulated network (latency, lost
 * requests, lost replies, partitions) on virtual time, then runs on the shared server. A crashed
 * node's calls never settle; a request already on the wire when it crashed still reaches the store.
 */
export class NodeStore implements Store {
  readonly kind = 'simulated';
  readonly capabilities: StoreCapabilities;
  alive = true;
  calls = 0;
  lostRequests = 0;
  lostReplies = 0;

  constructor(
    private readonly server: Store,
    private readonly time: VirtualTime,
    private readonly clock: NodeClock,
    private readonly rng: Rng,
    private readonly link: LinkFaults,
    private readonly onNet: NetEvent,
    private readonly observer: StoreObserver,
  ) {
    // The server's clock is one shared authority, as a database server's is.
    this.capabilities = { ...server.capabilities, serverTime: true, multiProcess: true, multiHost: true };
  }

  private partitioned(at: number): boolean {
    return this.link.partitions.some(([from, to]) => at >= from && at < to);
  }

  private faulty(): boolean {
    return this.time.now < this.link.faultsUntil;
  }

  private leg(): number {
    const [min, max] = this.link.latencyMs;
    return this.rng.between(min, max) / 2;
  }

  /** One round trip: request leg, execution on the server, reply leg (each may be lost). */
  private rpc<T>(op: string, args: readonly unknown[], exec: () => Promise<T>): Promise<T> {
    this.calls++;
    return new Promise<T>((resolve, reject) => {
      if (!this.alive) return;
      const sentAt = this.time.now;
      const fail = (why: string) => {
        this.time.at(sentAt + this.link.timeoutMs, () => {
          if (this.alive) reject(new OncelyError('STORE_UNAVAILABLE', `simulated: ${op} ${why}`));
        });
      };
      if (this.partitioned(sentAt)) return fail('timed out (partitioned)');
      if (this.faulty() && this.rng.chance(this.link.lostRequestRate)) {
        this.lostRequests++;
        this.onNet(`request lost: ${describeCall(op, args)}`);
        return fail('timed out (request lost)');
      }
      this.time.at(sentAt + this.leg(), () => {
        const settle = (deliver: () => void) => {
          const replyAt = this.time.now + this.leg();
          if (this.partitioned(this.time.now) || this.partitioned(replyAt)) {
            this.onNet(`reply lost (partitioned): ${describeCall(op, args)}`);
            return fail('timed out (partitioned)');
          }
          if (this.faulty() && this.rng.chance(this.link.lostReplyRate)) {
            this.lostReplies++;
            this.onNet(`reply lost (applied): ${describeCall(op, args)}`);
            return fail('timed out (reply lost)');
          }
          this.time.at(replyAt, () => {
            if (this.alive) deliver();
          });
        };
        exec().then(
          (value) => settle(() => resolve(value)),
          (err: unknown) => settle(() => reject(err)),
        );
      });
    });
  }

  now(): Promise<number> {
    return this.rpc('now', [], () => this.server.now());
  }
  acquire(requests: readonly LeaseRequest[]): Promise<(Lease | null)[]> {
    return this.rpc('acquire', [requests], async () => {
      const leases = await this.server.acquire(requests);
      this.observer.granted(leases);
      return leases;
    });
  }
  extend(key: string, token: number, leaseMs: number): Promise<number | null> {
    return this.rpc('extend', [key], () => this.server.extend(key, token, leaseMs));
  }
  release(key: string, token: number, holdUntil?: number): Promise<boolean> {
    return this.rpc('release', [key], () => this.server.release(key, token, holdUntil));
  }
  inspect(key: string): Promise<Lease | null> {
    return this.rpc('inspect', [key], () => this.server.inspect(key));
  }
  listLeases(options?: ListLeasesOptions): Promise<Lease[]> {
    return this.rpc('listLeases', [], () => this.server.listLeases(options));
  }
  put(key: string, value: string, options?: PutOptions): Promise<void> {
    return this.rpc('put', [key], () => this.server.put(key, value, options));
  }
  get(key: string): Promise<string | null> {
    return this.rpc('get', [key], () => this.server.get(key));
  }
  getMany(keys: readonly string[]): Promise<(string | null)[]> {
    return this.rpc('getMany', [keys[0]], () => this.server.getMany(keys));
  }
  scan(prefix: string, options?: ScanOptions): Promise<StoredRecord[]> {
    return this.rpc('scan', [prefix], () => this.server.scan(prefix, options));
  }
  count(prefix: string): Promise<number> {
    return this.rpc('count', [prefix], () => this.server.count(prefix));
  }
  delete(key: string): Promise<boolean> {
    return this.rpc('delete', [key], () => this.server.delete(key));
  }
  apply(ops: readonly WriteOp[]): Promise<boolean[]> {
    return this.rpc('apply', [ops], async () => {
      // Looked up and applied within one turn: no other call reaches the server in between.
      const notHeld = new Set<number>();
      for (const { key, token } of this.observer.pageLeasesOf(ops))
        if ((await this.server.inspect(key))?.token !== token) notHeld.add(token);
      const results = await this.server.apply(ops);
      this.observer.applied(ops, results, notHeld);
      return results;
    });
  }
  claimPage(lease: LeaseRequest, ops: readonly PageOp[]): Promise<PageClaim> {
    return this.rpc('claimPage', [lease.key], async () => {
      const claim = await this.server.claimPage(lease, ops);
      this.observer.claimed(lease, ops, claim);
      return claim;
    });
  }
  sweep(options?: SweepOptions): Promise<SweepResult> {
    return this.rpc('sweep', [], () => this.server.sweep(options));
  }
  async migrate(): Promise<void> {}
  async close(): Promise<void> {}
  tryLock(options: TryLockOptions): Promise<Lock | null> {
    return tryLock(this, options, this.clock);
  }
  async [Symbol.asyncDispose](): Promise<void> {}
}
