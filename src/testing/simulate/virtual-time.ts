import type { Clock } from '../../core/clock.js';
import { heapPop, heapPush } from '../../core/heap.js';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** Timers come out by time, then in the order they were set. */
const earlier = (a: Timer, b: Timer): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/**
 * Timers fired at one virtual instant, one after another, before the world counts as stuck: only
 * a loop that waits 0 ms again and again (never for a store reply or a later time) gets there — in
 * production a busy loop burning the CPU, here a run that would never end.
 */
export const MAX_TIMERS_AT_ONE_INSTANT = 50_000;

/** One turn of Node's event loop: every promise job queued before it has run when it resolves. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Virtual time: a queue of timers ordered by (time, insertion). `run` alternates between letting
 * every pending promise job run (one `setImmediate` turn: Node drains the whole microtask queue,
 * including jobs queued by jobs, before it runs the next macrotask) and firing the earliest timer.
 * Nothing the simulated nodes do waits on a real timer or I/O — their clocks, store calls and
 * handlers all end in timers of this queue — so when a turn ends, the simulated world is quiescent,
 * and the order of everything is decided by the timer queue alone: one seed, one history.
 */
export class VirtualTime {
  /** Virtual ms since the simulation began. */
  now = 0;
  /** Timers fired so far. */
  fired = 0;
  /** The virtual time at which `run` gave up because time stopped advancing (see MAX_TIMERS_AT_ONE_INSTANT). */
  stuckAt: number | undefined;
  private seq = 0;
  private readonly heap: Timer[] = [];

  /** Calls `fn` at virtual time `at` (not before now). */
  at(at: number, fn: () => void): Timer {
    const timer: Timer = { at: Math.max(at, this.now), seq: this.seq++, fn, cancelled: false };
    this.push(timer);
    return timer;
  }

  /**
   * Fires timers until none is left before `end`; then time stands at `end`. Stops early, with
   * `stuckAt` set, when MAX_TIMERS_AT_ONE_INSTANT timers in a row fire at one instant.
   */
  async run(end: number): Promise<void> {
    let atOneInstant = 0;
    for (;;) {
      await turn();
      const next = this.pop();
      if (!next) break;
      if (next.at > end) {
        this.push(next);
        break;
      }
      atOneInstant = next.at === this.now ? atOneInstant + 1 : 0;
      if (atOneInstant >= MAX_TIMERS_AT_ONE_INSTANT) {
        this.stuckAt = this.now;
        return;
      }
      this.now = next.at;
      this.fired++;
      next.fn();
    }
    this.now = Math.max(this.now, end);
  }

  private push(timer: Timer): void {
    heapPush(this.heap, timer, earlier);
  }

  private pop(): Timer | undefined {
    for (;;) {
      const top = heapPop(this.heap, earlier);
      if (!top || !top.cancelled) return top;
    }
  }
}

/**
 * A simulated node's local monotonic clock: it runs at `rate` (1 + drift) against virtual time
 * from an arbitrary origin (`offsetMs`: skew), and every sleep is a virtual timer. A timer may fire
 * up to `stall` ms late (a busy event loop, a GC pause). Once the node crashes (`alive` false)
 * nothing of it wakes up again: its sleeps and deferred calls never resolve.
 */
export class NodeClock implements Clock {
  alive = true;

  constructor(
    private readonly time: VirtualTime,
    private readonly rate: number,
    private readonly offsetMs: number,
    private readonly stall: () => number,
  ) {}

  monotonic(): number {
    return this.offsetMs + this.time.now * this.rate;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        timer.cancelled = true;
        signal?.removeEventListener('abort', onAbort);
        if (this.alive) resolve();
      };
      const onAbort = () => done();
      const timer = this.time.at(this.time.now + Math.max(0, ms) / this.rate + this.stall(), done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  timer(ms: number, fn: () => void): () => void {
    const timer = this.time.at(this.time.now + Math.max(0, ms) / this.rate + this.stall(), () => {
      if (this.alive) fn();
    });
    return () => {
      timer.cancelled = true;
    };
  }

  defer(fn: () => void): void {
    this.time.at(this.time.now, () => {
      if (this.alive) fn();
    });
  }
}
