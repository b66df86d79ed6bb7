import { INTERNAL_ABORT } from './signals.js';
/**
 * Time has one authority. Lease maths happens on the store's clock (`Store.now()`); local waiting
 * uses a monotonic clock that no NTP step or patched `Date.now` can move. `Clock` is injected
 * everywhere a component waits, so tests can freeze, skew and step it.
 */
export interface Clock {
  /** Monotonic milliseconds; only differences between two readings mean anything. */
  monotonic(): number;
  /** Waits `ms` on this clock; resolves early (without throwing) when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Runs `fn` once the promise jobs queued by the current turn have run (`setImmediate` by
   * default). A virtual clock (the simulator's) schedules it on its own timeline, so nothing the
   * scheduler waits for needs the real event loop to move on.
   */
  defer?(fn: () => void): void;
  /**
   * Calls `fn` once after `ms` on this clock, unless the returned function is called first: a
   * cancellable timer without an AbortController, its listener and a promise (a keep-alive per
   * run costs that much less at 100,000 runs). Optional: `startTimer` builds it from
   * `sleep` for a clock without it.
   */
  timer?(ms: number, fn: () => void): () => void;
}

/** `clock.timer(ms, fn)`, or the same from `clock.sleep` and an AbortController. Returns `cancel`. */
export function startTimer(clock: Clock, ms: number, fn: () => void): () => void {
  if (clock.timer) return clock.timer(ms, fn);
  const cancel = new AbortController();
  void clock.sleep(ms, cancel.signal).then(() => {
    if (!cancel.signal.aborted) fn();
  });
  return () => cancel.abort(INTERNAL_ABORT);
}

/** `clock.defer(fn)`, or `setImmediate(fn)` for a clock without one. */
export function deferOn(clock: Clock, fn: () => void): void {
  if (clock.defer) clock.defer(fn);
  else setImmediate(fn);
}

/**
 * The longest delay `setTimeout` takes (2^31 - 1 ms, about 24.8 days): Node fires a longer one
 * after 1 ms instead, so a job `timeout: '30d'` would time out at once. Longer sleeps re-arm.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The process's real monotonic clock (`performance.now()`). */
export const systemClock: Clock = {
  monotonic: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const until = performance.now() + Math.max(0, ms);
      let timer = setTimeout(wake, Math.min(Math.max(0, ms), MAX_TIMER_MS));
      function wake() {
        const left = until - performance.now();
        if (ms > MAX_TIMER_MS && left > 0) {
          timer = setTimeout(wake, Math.min(left, MAX_TIMER_MS));
          return;
        }
        done();
      }
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    }),
  timer: (ms, fn) => {
    const until = performance.now() + Math.max(0, ms);
    let timer = setTimeout(wake, Math.min(Math.max(0, ms), MAX_TIMER_MS));
    function wake() {
      const left = until - performance.now();
      if (ms > MAX_TIMER_MS && left > 0) timer = setTimeout(wake, Math.min(left, MAX_TIMER_MS));
      else fn();
    }
    return () => clearTimeout(timer);
  },
};

/**
 * Tracks the offset between the local monotonic clock and a store clock, so a component can ask
 * "what time is it on the store?" without a round trip. Each `sample` narrows the estimate; the
 * offset with the smallest round trip wins, since its error bound (rtt / 2) is the tightest.
 * Samples older than `maxAgeMs` are forgotten so that rate drift cannot accumulate.
 *
 * @example
 * const sync = new StoreClock(() => store.now());
 * await sync.sample();
 * sync.estimate(); // store time in ms, ± sync.errorBound()
 */
export class StoreClock {
  private offset: number | undefined;
  private rtt = Number.POSITIVE_INFINITY;
  private sampledAt = Number.NEGATIVE_INFINITY;
  private lastEstimate = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly readStore: () => Promise<number>,
    private readonly clock: Clock = systemClock,
    private readonly maxAgeMs = 60_000,
  ) {}

  /** One round trip to the store; returns the store time read. */
  async sample(): Promise<number> {
    const sent = this.clock.monotonic();
    const storeNow = await this.readStore();
    const received = this.clock.monotonic();
    const rtt = received - sent;
    const stale = received - this.sampledAt > this.maxAgeMs;
    if (stale || rtt <= this.rtt) {
      // The store read happened somewhere inside [sent, received]; the midpoint halves the error.
      this.offset = storeNow - (sent + rtt / 2);
      this.rtt = rtt;
      this.sampledAt = received;
    }
    return storeNow;
  }

  /**
   * Estimated store time now, in ms; throws if no sample was taken yet. Never decreases: a new
   * sample with a tighter round trip may move the offset back by up to the old error bound, and
   * callers (heartbeats, fire-time checks) must not see time go backwards.
   */
  estimate(): number {
    if (this.offset === undefined) throw new Error('StoreClock.estimate() before the first sample()');
    this.lastEstimate = Math.max(this.lastEstimate, this.clock.monotonic() + this.offset);
    return this.lastEstimate;
  }

  /** Whether a sample was taken (so {@link estimate} answers). */
  sampled(): boolean {
    return this.offset !== undefined;
  }

  /** Half the round trip of the sample in use: the estimate is within ± this many ms. */
  errorBound(): number {
    return this.rtt / 2;
  }

  /** Store time minus local wall time (`Date.now()`), for diagnostics such as "your clock is 40 s fast". */
  skewFromWallClock(): number {
    return this.estimate() - Date.now();
  }
}
