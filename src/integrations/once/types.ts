import type { Duration } from '../../core/duration.js';
import type { Logger } from '../../core/logger.js';

/** What `fn` gets for the one run of a fire time. */
export interface OnceContext {
  /** The `name` option. */
  name: string;
  /** The fire time this run stands for (not the moment the tick arrived). */
  fireTime: Date;
  /**
   * Fencing token of the claim: strictly greater than any earlier claim's of the same
   * `(name, fireTime)`, and (on every shipped store) than any claim granted before it. Pass it to
   * what you write so a stale run's late writes can be refused.
   */
  token: number;
  /** Aborts (`OncelyError` `LOCK_LOST`) if the claim cannot be renewed before its lease would end. */
  signal: AbortSignal;
}

/** Where a reported error came from. */
export type OnceErrorPhase = 'fire-time' | 'claim' | 'run' | 'release';

/** What `onError` gets besides the error: which `once()` and which step of a tick. */
export interface OnceErrorInfo {
  /** The `name` option. */
  name: string;
  /** The fire time of the tick, when it could be derived. */
  fireTime: Date | undefined;
  /** The step that failed: deriving the fire time, claiming it, running `fn`, or releasing the claim. */
  during: OnceErrorPhase;
}

/** Why a tick did not run `fn`. */
export type OnceSkipReason =
  /** Another instance claimed this fire time (and ran it or is running it), or this one did before. */
  | 'taken'
  /** Claimed later than `fireTime + tolerance` on the store clock: a missed fire time, not run. */
  | 'late'
  /** The store could not be asked (or the claim was lost before `fn` started): never run unclaimed. */
  | 'store-error'
  /** No fire time could be derived from the tick (no schedule in the options and none in the tick). */
  | 'no-fire-time';

/** What one tick did. */
export type OnceOutcome<T> =
  | {
      /** This instance claimed the fire time and `fn` returned. */
      status: 'succeeded';
      /** The fire time the tick stood for. */
      fireTime: Date;
      /** The claim's fencing token. */
      token: number;
      /** What `fn` returned (awaited). */
      value: T;
    }
  | {
      /** This instance claimed the fire time and `fn` threw (also reported to `onError`). */
      status: 'failed';
      /** The fire time the tick stood for. */
      fireTime: Date;
      /** The claim's fencing token. */
      token: number;
      /** What `fn` threw. */
      error: unknown;
    }
  | {
      /** `fn` did not run on this tick. */
      status: 'skipped';
      /** Why: see {@link OnceSkipReason}. */
      reason: OnceSkipReason;
      /** The fire time, when it could be derived. */
      fireTime?: Date;
      /** What went wrong, for `store-error` and (when deriving it threw) `no-fire-time`. */
      error?: unknown;
    };

/**
 * The function `once()` returns: hand it to `new Cron(pattern, tick)` (croner), `cron.schedule(expr,
 * tick)` (node-cron) or `setInterval(tick, ms)`. It reads what the library passes (croner's job,
 * node-cron's context) and ignores anything else. Its promise settles when the tick is done
 * (`fn` finished, or the tick skipped) and never rejects.
 */
export interface OnceTick<T> {
  (tick?: unknown, ...rest: unknown[]): Promise<void>;
  /** The same tick, resolving to what it did (cron libraries want a callback that returns `void`). */
  run(tick?: unknown): Promise<OnceOutcome<T>>;
}

/**
 * What `once(store, options, fn)` accepts. Durations are milliseconds or strings (`'30s'`, `'5m'`).
 *
 * @example
 * once(store, { name: 'report', cron: '0 9 * * *', timezone: 'Europe/Berlin', tolerance: '1m' }, sendReport);
 */
export interface OnceOptions {
  /** What the fire times are claimed under: 1..255 characters, the same on every instance. */
  name: string;
  /**
   * The schedule the ticks follow, to snap a tick to its fire time (croner syntax, 5 or 6 fields).
   * Needed for setInterval and node-cron 3; optional for croner and node-cron 4, whose ticks carry
   * their schedule or fire time. When given, it decides.
   */
  cron?: string;
  /** IANA time zone of `cron` (default `UTC`). */
  timezone?: string;
  /** The interval the ticks follow: fire times are its multiples counted from the Unix epoch. */
  every?: Duration;
  /**
   * How long a claim outlives an instance that stops renewing it (default `'30s'`). The claim's
   * lease is `lockAtMostFor + tolerance`, renewed while `fn` runs, so that it lasts until
   * `fireTime + tolerance` even if this instance dies; `ctx.signal` aborts if it cannot be renewed
   * before it would end.
   */
  lockAtMostFor?: Duration;
  /**
   * How late, on the store clock, a tick may still claim its fire time; a claimed fire time stays
   * taken ("done") until at least `fireTime + tolerance`. Default 30 s, or the `every` interval
   * when that is longer.
   */
  tolerance?: Duration;
  /** Who holds the claims, shown by `oncely locks`; default `host:pid:random`. */
  owner?: string;
  /** Called for errors: `fn` threw, the store failed, no fire time. Default: `logger.error`. */
  onError?: (error: unknown, info: OnceErrorInfo) => void;
  /** Default: warnings and errors to the console (stderr), nothing else. */
  logger?: Logger;
}
