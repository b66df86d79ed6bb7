import { type Clock, systemClock } from '../core/clock.js';
import { type Duration, parseDuration, parsePositiveDuration } from '../core/duration.js';
import { invalidArgument } from '../core/errors.js';
import type { LockGrant, LockTable } from '../store/lock-table.js';
import { RELEASE_GRANTED, type TrustedCalls } from '../store/trusted.js';
import type { Lease, Store } from '../store/types.js';
import type { Lock } from './types.js';
import type { LockSpec } from './validate.js';

/**
 * A `Lock` over one store lease. Every store call carries the lease's token (in a lock table, the
 * whole grant), so a holder whose lease expired and was taken over cannot extend or release the
 * new holder's lease.
 */
export class LeaseLock implements Lock {
  readonly name: string;
  readonly owner: string;
  readonly token: number;
  readonly lockedAt: Date;
  private until: Date;
  private deadline: number;
  /** Store time before which release keeps the key taken (lockAtLeastFor); 0 = no hold. */
  private holdUntil: number;
  private done = false;

  constructor(
    private readonly store: Store,
    private readonly spec: LockSpec,
    lease: Lease,
    /** Monotonic time just before the acquire request was sent. */
    sentAt: number,
    private readonly clock: Clock = systemClock,
    /** The store's lock table when the lease lives there (ShedLock's table), not in its leases. */
    private readonly table?: LockTable,
  ) {
    this.name = spec.name;
    this.owner = lease.owner;
    this.token = lease.token;
    this.lockedAt = new Date(lease.acquiredAt);
    this.until = new Date(lease.expiresAt);
    this.holdUntil = spec.atLeastMs > 0 ? lease.acquiredAt + spec.atLeastMs : 0;
    // The store granted the lease at some instant after `sentAt`, so on the local clock it surely
    // ends no later than sentAt + lease length (clock rates are assumed equal; drift is ppm).
    this.deadline = sentAt + (lease.expiresAt - lease.acquiredAt);
  }

  get lockedUntil(): Date {
    return this.until;
  }

  get released(): boolean {
    return this.done;
  }

  get localDeadline(): number {
    return this.deadline;
  }

  async extend(lockAtMostFor: Duration, lockAtLeastFor?: Duration): Promise<boolean> {
    const what = `lock ${JSON.stringify(this.name)}`;
    const atMostMs = parsePositiveDuration(lockAtMostFor, `${what}: lockAtMostFor`);
    const atLeastMs =
      lockAtLeastFor === undefined ? undefined : parseDuration(lockAtLeastFor, `${what}: lockAtLeastFor`);
    if (atLeastMs !== undefined && atLeastMs > atMostMs) {
      throw invalidArgument(
        `${what}: lockAtLeastFor (${atLeastMs} ms) must not exceed lockAtMostFor (${atMostMs} ms)`,
      );
    }
    if (this.done) return false;
    const sentAt = this.clock.monotonic();
    const expiresAt = this.table
      ? await this.table.extend(this.grant(), atMostMs)
      : await this.store.extend(this.spec.key, this.token, atMostMs);
    if (expiresAt === null) {
      this.done = true;
      return false;
    }
    this.until = new Date(expiresAt);
    // A store extend never shortens the lease (a lock table's may: ShedLock's own semantics), so
    // an earlier local deadline still bounds it.
    this.deadline = this.table ? sentAt + atMostMs : Math.max(this.deadline, sentAt + atMostMs);
    // expiresAt - atMostMs is the store's now when the extend moved the end; when the lease already
    // ran longer it is later than now, and the hold errs long (never past the end the lock had).
    if (atLeastMs !== undefined && atLeastMs > 0)
      this.holdUntil = Math.max(this.holdUntil, expiresAt - atMostMs + atLeastMs);
    return true;
  }

  async release(): Promise<boolean> {
    if (this.done) return false;
    this.done = true;
    if (this.table) return await this.table.release(this.grant(), this.holdUntil);
    // Key, token and holdUntil come from the grant: a shipped store takes them without validating again.
    const granted = (this.store as Partial<TrustedCalls>)[RELEASE_GRANTED];
    if (granted) return await granted.call(this.store, this.spec.key, this.token, this.holdUntil);
    return await this.store.release(this.spec.key, this.token, this.holdUntil);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  private grant(): LockGrant {
    return { name: this.name, owner: this.owner, acquiredAt: this.lockedAt.getTime(), token: this.token };
  }

  /** Marks the lock lost without a store call (keep-alive learnt the lease is gone). */
  markLost(): void {
    this.done = true;
  }
}
