import type { Clock } from '../../core/clock.js';
import type { Renewable } from '../../lock/keep-alive.js';
import type { Lease, Store } from '../../store/types.js';

/**
 * The claim of one `(name, fireTime)`: a lease on its own key, so claims of different fire times
 * never meet (a slow run of 10:00 does not make 10:01 wait, and a late tick of 10:00 cannot be
 * mistaken for 10:01). Renewable by `KeepAlive`; `expiresAt` is the latest store-clock end known.
 */
export class OnceClaim implements Renewable {
  readonly name: string;
  readonly token: number;
  readonly acquiredAt: number;
  private deadline: number;
  private until: number;

  private constructor(
    private readonly store: Store,
    private readonly key: string,
    lease: Lease,
    sentAt: number,
    private readonly clock: Clock,
  ) {
    this.name = key;
    this.token = lease.token;
    this.acquiredAt = lease.acquiredAt;
    this.until = lease.expiresAt;
    // Granted at some instant after `sentAt`: on the local clock it ends no later than this.
    this.deadline = sentAt + (lease.expiresAt - lease.acquiredAt);
  }

  /** One conditional acquire (free or expired keys only); `null` when someone holds the key. */
  static async take(
    store: Store,
    key: string,
    owner: string,
    leaseMs: number,
    clock: Clock,
  ): Promise<OnceClaim | null> {
    const sentAt = clock.monotonic();
    const [lease] = await store.acquire([{ key, owner, leaseMs }]);
    return lease ? new OnceClaim(store, key, lease, sentAt, clock) : null;
  }

  get localDeadline(): number {
    return this.deadline;
  }

  /** Store time by which the lease surely still holds, unless lost. */
  get expiresAt(): number {
    return this.until;
  }

  async extend(leaseMs: number): Promise<boolean> {
    const sentAt = this.clock.monotonic();
    const until = await this.store.extend(this.key, this.token, leaseMs);
    if (until === null) return false;
    this.until = Math.max(this.until, until);
    this.deadline = Math.max(this.deadline, sentAt + leaseMs);
    return true;
  }

  /**
   * Gives the claim up, keeping the key taken until `holdUntil` (store time): the "done" marker
   * a late tick of another instance meets. `false` when the lease was already gone.
   */
  release(holdUntil?: number): Promise<boolean> {
    return this.store.release(this.key, this.token, holdUntil);
  }
}
