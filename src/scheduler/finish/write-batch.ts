import { type Clock, deferOn, startTimer } from '../../core/clock.js';
import { INTERNAL_ABORT } from '../../core/signals.js';
import type { Store, WriteOp } from '../../store/types.js';
import { MAX_BATCH } from '../../store/validate.js';

/**
 * Ops queued that go out without waiting for the turn of the event loop to end: a full batch.
 * Smaller early batches (100 ops, as before) took the {@link MAX_IN_FLIGHT} calls with a few runs
 * each while the claim's other runs were still being set up in the same turn, and those then
 * waited for a call to return (a store round trip later), while the early calls gained little
 * (pg, for one, writes a pooled query from a later tick, after the turn's other runs are set up).
 * 1,000 jobs due together on three node processes, PostgreSQL: the last start of a fire time
 * 145–254 ms after it with 100, 58–201 ms with a full batch; 20,000 stored schedules due at once
 * on one node: ~118 apply calls instead of ~290, all started no later.
 */
const EARLY_FLUSH_OPS = MAX_BATCH;
/** `apply` calls in flight at once; what is submitted meanwhile waits and goes out in bigger batches. */
const MAX_IN_FLIGHT = 3;
/**
 * A call in flight longer than this no longer holds back the others: a hung connection (a store
 * that stopped answering) must not stall every later write of the node behind it.
 */
const STUCK_AFTER_MS = 1_000;

interface Group {
  ops: WriteOp[];
  resolve: (results: boolean[]) => void;
  reject: (err: unknown) => void;
}

/**
 * Coalesces the store writes of many runs into few `store.apply` calls (group commit): while
 * fewer than {@link MAX_IN_FLIGHT} calls are out, what is submitted in one turn of the event loop
 * goes out together (at once when it fills a batch); while that many are out, writes
 * wait and leave, up to MAX_BATCH ops per call, as soon as one returns. When 10,000 runs start
 * together their in-flight records are ten round trips of 1,000, not hundreds of small ones
 * queued behind a connection pool, and a lone write still goes out at once.
 *
 * A group's ops stay in order and in one `apply` call, so they are applied together (atomically
 * on every shipped backend). Groups in one call are unrelated; a failed call rejects every group
 * in it and each caller decides whether to retry.
 */
export class WriteBatcher {
  private queue: Group[] = [];
  private queued = 0;
  private scheduled = false;
  /** Calls in flight for less than STUCK_AFTER_MS. */
  private inFlight = 0;

  /**
   * `answered`: told after every call the store answered (a sign of life the node's loop, backing
   * off after failed ticks, takes to try again at once — NodeState.storeAnswered).
   */
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly answered: () => void = () => {},
  ) {}

  /** Groups that may wait up to their linger for company (`submit`'s `lingerMs`), oldest first. */
  private lingering: Group[] = [];
  /** A timer is set to send the lingering groups. */
  private lingerArmed = false;

  /**
   * Queues `ops` as one group. `lingerMs`: the group may wait that long for others to share its
   * call — writes that come one by one (runs of a jittered stretch, each ending on its own) then
   * go in one call per linger instead of one each — and goes earlier with any call made meanwhile.
   */
  submit(ops: WriteOp[], lingerMs = 0): Promise<boolean[]> {
    if (ops.length === 0) return Promise.resolve([]);
    if (lingerMs > 0)
      return new Promise<boolean[]>((resolve, reject) => {
        this.lingering.push({ ops, resolve, reject });
        if (this.lingerArmed) return;
        this.lingerArmed = true;
        startTimer(this.clock, lingerMs, () => {
          this.lingerArmed = false;
          this.takeLingering();
          if (this.inFlight < MAX_IN_FLIGHT) this.flush();
        });
      });
    return new Promise<boolean[]>((resolve, reject) => {
      this.takeLingering();
      this.queue.push({ ops, resolve, reject });
      this.queued += ops.length;
      if (this.inFlight >= MAX_IN_FLIGHT) return; // a returning call flushes
      // A full batch goes at once: when 1,000 runs start together the first ones need not wait
      // until the last one has been set up.
      if (this.queued >= EARLY_FLUSH_OPS) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        deferOn(this.clock, () => {
          this.scheduled = false;
          this.flush();
        });
      }
    });
  }

  /** Moves the lingering groups into the queue (they go with the next call). */
  private takeLingering(): void {
    if (this.lingering.length === 0) return;
    for (const g of this.lingering) {
      this.queue.push(g);
      this.queued += g.ops.length;
    }
    this.lingering = [];
  }

  /** Sends queued groups, MAX_BATCH ops per call (never splitting a group), while calls are free. */
  private flush(): void {
    while (this.queue.length > 0 && this.inFlight < MAX_IN_FLIGHT) {
      const batch: Group[] = [];
      let size = 0;
      while (this.queue.length > 0) {
        const g = this.queue[0]!;
        if (size + g.ops.length > MAX_BATCH && batch.length > 0) break;
        batch.push(g);
        size += g.ops.length;
        this.queue.shift();
      }
      this.queued -= size;
      void this.send(batch);
    }
  }

  private async send(groups: Group[]): Promise<void> {
    this.inFlight++;
    let counted = true;
    const release = () => {
      if (!counted) return;
      counted = false;
      this.inFlight--;
      this.flush();
    };
    const stuck = new AbortController();
    void this.clock.sleep(STUCK_AFTER_MS, stuck.signal).then(release);
    try {
      const results = await this.store.apply(groups.flatMap((g) => g.ops));
      this.answered();
      let at = 0;
      for (const g of groups) {
        g.resolve(results.slice(at, at + g.ops.length));
        at += g.ops.length;
      }
    } catch (err) {
      for (const g of groups) g.reject(err);
    } finally {
      stuck.abort(INTERNAL_ABORT);
      release();
    }
  }
}
