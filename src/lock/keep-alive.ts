import { type Clock, systemClock } from '../core/clock.js';
import { OncelyError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { silentLogger } from '../core/logger.js';
import { INTERNAL_ABORT } from '../core/signals.js';

/** What a keep-alive renews: a {@link LeaseLock}, or several leases renewed together. */
export interface Renewable {
  readonly name: string;
  /** Local monotonic time by which the lease may have ended (measured from before the last grant/extend). */
  readonly localDeadline: number;
  /** Extends to now + leaseMs (never shorter than it already runs); `false` when the lease is gone. */
  extend(leaseMs: number): Promise<boolean>;
}

export interface KeepAliveOptions {
  /** Lease length to renew to on each extend. */
  leaseMs: number;
  /** Renew at all? Without renewal the signal still aborts before the lease ends. */
  renew: boolean;
  clock?: Clock;
  logger?: Logger;
}

/**
 * Abort this long before the lease's local deadline, so the holder can stop before anyone else
 * may take the lease: a tenth of the lease, at most 1 s, at least 1 ms.
 */
export function safetyMargin(leaseMs: number): number {
  return Math.max(1, Math.min(1_000, Math.floor(leaseMs / 10)));
}

/**
 * Keeps a lock's lease alive while work runs, and aborts `signal` (reason: `OncelyError`
 * `LOCK_LOST`) **before** the lease could end when it cannot.
 *
 * Invariant: `signal` aborts no later than `lock.localDeadline - safetyMargin`, where the local
 * deadline is measured from just before the store call that last granted/extended the lease — so
 * the work is told to stop while the lease still holds on the store clock.
 * Renewals happen every leaseMs / 2; a failed renewal (store unreachable) is retried every
 * leaseMs / 10 until the deadline; a renewal answered "lease gone" aborts at once.
 */
export class KeepAlive {
  private readonly controller = new AbortController();
  private readonly stopped = new AbortController();
  private readonly loop: Promise<void>;
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(
    private readonly lock: Renewable,
    private readonly options: KeepAliveOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.loop = this.run();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Stops renewing; waits for an in-flight renewal so release() never races it. */
  async stop(): Promise<void> {
    this.stopped.abort(INTERNAL_ABORT);
    await this.loop;
  }

  private lost(message: string, cause?: unknown): void {
    if (this.controller.signal.aborted) return;
    const reason = new OncelyError('LOCK_LOST', `lock ${JSON.stringify(this.lock.name)}: ${message}`, {
      cause,
    });
    this.logger.warn(reason.message);
    this.controller.abort(reason);
  }

  private async run(): Promise<void> {
    const { leaseMs, renew } = this.options;
    const margin = safetyMargin(leaseMs);
    let nextRenewal = this.clock.monotonic() + leaseMs / 2;
    while (!this.stopped.signal.aborted) {
      const abortAt = this.lock.localDeadline - margin;
      const now = this.clock.monotonic();
      if (now >= abortAt) {
        this.lost(
          renew ? 'lease could not be extended in time' : 'lease is about to expire (keepAlive is off)',
        );
        return;
      }
      const wakeAt = renew ? Math.min(nextRenewal, abortAt) : abortAt;
      // Never sleep more than 30 s without re-checking the time.
      await this.clock.sleep(Math.min(Math.max(0, wakeAt - now), 30_000), this.stopped.signal);
      if (this.stopped.signal.aborted) return;
      if (!renew || this.clock.monotonic() < nextRenewal) continue;
      try {
        const ok = await this.lock.extend(leaseMs);
        if (!ok) {
          this.lost('lease expired or was taken over before it could be extended');
          return;
        }
        nextRenewal = this.clock.monotonic() + leaseMs / 2;
      } catch (err) {
        this.logger.warn(`lock ${JSON.stringify(this.lock.name)}: extend failed, retrying`, err);
        nextRenewal = this.clock.monotonic() + Math.max(1, leaseMs / 10);
      }
    }
  }
}
