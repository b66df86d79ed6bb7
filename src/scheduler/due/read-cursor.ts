import { parseDueEntry } from '../keys.js';

/**
 * Where this node's next read of the due index begins (due-index.ts): at the first key, or after
 * the last key a read took when it stopped with entries still due (at MAX_PAGES, or for want of
 * slots: due-scan.ts), so that a node working through a backlog does not read what it passed
 * over again and again.
 *
 * A read that goes on never meets an entry moved behind its key — a missed fire time settled
 * onto the latest missed one (misfire `run-once`), a replay's next catch-up entry — and on a fleet
 * that stays full every read stops for want of slots, so the key moves forward with the clock:
 * such an entry lay unread for as long as the load lasted (simulator, two jobs of jittered stored
 * schedules on a saturated fleet: a schedule's fire times lost from +12 s to the end of the run;
 * test/simulate-saturated-reads.test.ts). So a move this node plans behind the key drops it
 * (`movedTo`), and a read begins at the first key at least every `fullEveryMs`: a move another
 * node made (simulator, the same fleet under partitions and clock skew: a schedule's entry moved
 * by a node it is not preferred by lay behind its preferred node's key until the run's end).
 */
export class ReadCursor {
  private after: string | undefined;
  /** The start time in `after` (the key's time). */
  private afterAt = Number.POSITIVE_INFINITY;
  /** Store time of the last read that began at the first key. */
  private fromStartAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly fullEveryMs: number) {}

  /** A read begins at `now`: the key it goes on after (undefined: the first key). `reset`: what it reads changed. */
  begin(now: number, reset: boolean): string | undefined {
    if (reset || now - this.fromStartAt >= this.fullEveryMs) this.drop();
    if (this.after === undefined) this.fromStartAt = now;
    return this.after;
  }

  /** The read ended: the next one goes on after `key`, or begins at the first key. */
  stoppedAt(key: string | undefined): void {
    this.after = key;
    this.afterAt = key === undefined ? Number.POSITIVE_INFINITY : parseDueEntry(key).at;
  }

  /** This node planned a move of an entry to start time `at`: behind the key, the next read begins at the first key. */
  movedTo(at: number): void {
    if (at <= this.afterAt) this.drop();
  }

  drop(): void {
    this.stoppedAt(undefined);
  }
}
