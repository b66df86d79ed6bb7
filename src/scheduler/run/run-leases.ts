import type { Clock } from '../../core/clock.js';
import type { Renewable } from '../../lock/keep-alive.js';
import type { Lease, Store } from '../../store/types.js';

/**
 * A run's leases — its occurrence and, if it has one, its overlap gate — as one {@link Renewable}
 * for the run's keep-alive: extended together, lost when either is. What a `LeaseLock` per lease
 * and a pair of them did, without their dates, specs and closures: 1,000 runs start at once.
 *
 * Invariant: `localDeadline` never lies past the end of either lease on the store's clock. Each
 * was granted at some instant after `sentAt` (local monotonic time before the acquire was sent),
 * so it ends no later than `sentAt` + its length; an extend moves that to the local time before
 * the extend was sent + `leaseMs`, once both answered (clock rates are assumed equal; drift is ppm).
 */
export class RunLeases implements Renewable {
  readonly name: string;
  private deadline: number;
  private gone = false;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly occurrence: Lease,
    private readonly gate: Lease | undefined,
    sentAt: number,
  ) {
    this.name = occurrence.key;
    const length = (l: Lease) => l.expiresAt - l.acquiredAt;
    this.deadline = sentAt + (gate ? Math.min(length(occurrence), length(gate)) : length(occurrence));
  }

  get localDeadline(): number {
    return this.deadline;
  }

  async extend(leaseMs: number): Promise<boolean> {
    if (this.gone) return false;
    const sentAt = this.clock.monotonic();
    const [a, b] = await Promise.all([
      this.store.extend(this.occurrence.key, this.occurrence.token, leaseMs),
      this.gate ? this.store.extend(this.gate.key, this.gate.token, leaseMs) : 0,
    ]);
    if (a === null || b === null) {
      this.gone = true;
      return false;
    }
    // A store extend never shortens a lease, so the earlier deadline still bounds it.
    this.deadline = Math.max(this.deadline, sentAt + leaseMs);
    return true;
  }
}
