import { type Clock, startTimer, systemClock } from '../core/clock.js';
import { OncelyError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { silentLogger } from '../core/logger.js';
import { LazyAbort } from '../core/signals.js';

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
  /** Called once, with the `LOCK_LOST` reason, when the lease cannot be kept (as `signal` aborts). */
  onLost?: (reason: OncelyError) => void;
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
 * Invariant: `signal` aborts (and `onLost` is called) no later than `lock.localDeadline -
 * safetyMargin`, where the local deadline is measured from just before the store call that last
 * granted/extended the lease — so the work is told to stop while the lease still holds on the
 * store clock. Renewals happen every leaseMs / 2 (the first at once when less than half of the
 * lease is left at the start); a failed renewal (store unreachable) is retried every leaseMs / 10
 * until the deadline; a renewal answered "lease gone" aborts at once.
 *
 * One timer at a time and no promise chain: the scheduler keeps one of these per run, and a run
 * that ends before its first renewal (most do) costs a timer set and cleared. The AbortController
 * behind `signal` is made only when someone asks for it.
 */
export class KeepAlive {
  /** Aborted (reason: the `LOCK_LOST` error) once the lease cannot be kept; its signal made on demand. */
  private readonly halt = new LazyAbort();
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly margin: number;
  private nextRenewal: number;
  private cancelTimer: (() => void) | undefined;
  /**
   * The renewal in flight, if any: stop() waits for it so that release() never races it — unless
   * the lease was declared lost meanwhile (an extend that never answers must not hold stop() up).
   */
  private renewing: Promise<void> | undefined;
  private renewed: (() => void) | undefined;
  /** {@link fresh} callers waiting for the next renewal's answer. */
  private waiters: (() => void)[] = [];
  private stopped = false;

  constructor(
    private readonly lock: Renewable,
    private readonly options: KeepAliveOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.margin = safetyMargin(options.leaseMs);
    // Half a lease from now — or, for work that starts with less than half its lease left (a
    // claim adopted after its answer was lost, a run that waited for its start), at once: the
    // first renewal was always half a lease after the start, so such work was aborted at the
    // deadline without a try, though the store answered — and a node frozen across that
    // deadline ran on beside the next holder of its gate (simulator, mix5, seed 780: a run
    // started 2.1 s into a 3 s lease, another node took the gate 1 s later). Renewed only two
    // safety margins before the deadline, one lost extend and a freeze still did it (simulator,
    // `jit,jall,qa,churn,shs`, mix5 faults, seed 131: a run started 0.8 s before its deadline, its
    // extend lost 0.3 s later, its node frozen past the abort point; another node took the gate).
    const now = this.clock.monotonic();
    this.nextRenewal =
      lock.localDeadline - now < options.leaseMs / 2
        ? now
        : Math.min(now + options.leaseMs / 2, lock.localDeadline - 2 * this.margin);
    this.schedule();
  }

  get signal(): AbortSignal {
    return this.halt.signal;
  }

  /**
   * Renews now when less than `minLeftMs` of the lease is left on the local clock (or joins the
   * renewal already due or in flight), and resolves once it has answered (or the lease is lost):
   * `false` when the lease is lost. For work about to start late in its lease: started with a
   * few hundred ms left, its first renewal (due at once) went out beside the handler, and a node
   * frozen right after the start ran on past the deadline beside the next holder of its gate
   * (simulator, `jit,jall,sh,shs,pq`, busy faults, seed 23: a shard started 0.44 s before its
   * deadline, its node frozen 0.7 s). Nothing is awaited when enough of the lease is left.
   */
  async fresh(minLeftMs: number): Promise<boolean> {
    if (this.halt.aborted) return false;
    if (this.stopped || !this.options.renew) return true;
    const now = this.clock.monotonic();
    if (this.lock.localDeadline - now >= minLeftMs) return true;
    if (this.renewing === undefined && this.nextRenewal > now) {
      // Due later (renewed before a long wait): due now.
      this.nextRenewal = now;
      this.cancelTimer?.();
      this.cancelTimer = undefined;
      this.schedule();
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
    return !this.halt.aborted;
  }

  /** Wakes every {@link fresh} waiting for the renewal that just answered (or the loss). */
  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /**
   * Stops renewing; waits for an in-flight renewal so release() never races it — at most until
   * the lease would end (its abort timer stays set while it waits).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.renewing) await this.renewing;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.wake();
  }

  private lost(message: string, cause?: unknown): void {
    if (this.halt.aborted) return;
    const reason = new OncelyError('LOCK_LOST', `lock ${JSON.stringify(this.lock.name)}: ${message}`, {
      cause,
    });
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.renewed?.();
    this.logger.warn(reason.message);
    this.halt.abort(reason);
    this.options.onLost?.(reason);
    this.wake();
  }

  /** Sets the timer for the next renewal or, when the lease cannot be kept, the abort. */
  private schedule(): void {
    if (this.stopped || this.halt.aborted) return;
    const { renew } = this.options;
    const abortAt = this.lock.localDeadline - this.margin;
    const now = this.clock.monotonic();
    if (now >= abortAt) {
      this.lost(
        renew ? 'lease could not be extended in time' : 'lease is about to expire (keepAlive is off)',
      );
      return;
    }
    const wakeAt = renew ? Math.min(this.nextRenewal, abortAt) : abortAt;
    // Never sleep more than 30 s without re-checking the time.
    const ms = Math.min(Math.max(0, wakeAt - now), 30_000);
    this.cancelTimer = startTimer(this.clock, ms, () => {
      this.cancelTimer = undefined;
      if (this.stopped) return;
      if (!renew || this.clock.monotonic() < this.nextRenewal) return this.schedule();
      // The abort stays due while the extend is out: one that never answers (a half-open
      // connection) must not keep the work going past the lease.
      this.cancelTimer = startTimer(this.clock, Math.max(0, abortAt - this.clock.monotonic()), () => {
        this.cancelTimer = undefined;
        this.lost('lease could not be extended in time (the store did not answer)');
      });
      this.renewing = new Promise<void>((resolve) => {
        this.renewed = () => {
          this.renewing = undefined;
          this.renewed = undefined;
          resolve();
        };
      });
      void this.renew().finally(() => this.renewed?.());
    });
  }

  private async renew(): Promise<void> {
    const { leaseMs } = this.options;
    try {
      const ok = await this.lock.extend(leaseMs);
      if (!ok) {
        this.lost('lease expired or was taken over before it could be extended');
        return;
      }
      this.nextRenewal = this.clock.monotonic() + leaseMs / 2;
    } catch (err) {
      this.logger.warn(`lock ${JSON.stringify(this.lock.name)}: extend failed, retrying`, err);
      this.nextRenewal = this.clock.monotonic() + Math.max(1, leaseMs / 10);
    }
    this.wake();
    if (this.halt.aborted || this.stopped) return;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.schedule();
  }
}
