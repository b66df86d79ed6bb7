import type { Clock } from '../../core/clock.js';
import { startTimer } from '../../core/clock.js';
import type { Store, WriteOp } from '../../store/types.js';
import type { WriteBatcher } from '../finish/write-batch.js';
import { keys, type OccurrenceId } from '../keys.js';

/**
 * A run's or a page's record of a start is written *before* its handlers are called: it is the
 * claim's promise, not yet a run. A node whose start write was applied but whose answer never
 * came back (a stalled link, lost replies until its lease ran out), or came late, or that froze
 * before its handlers, leaves a record of a start that did not happen — then, or by then. Another
 * node judging a later fire time of the same overlap gate must not skip it naming such a "run"
 * (the fire time would be recorded skipped while nothing ran: simulator and chaos, a half-open
 * link on the node holding the page). So a run that goes on says so, after its handlers were
 * called: this mark, `<through>|<first>[|<i>[=<at>],…]` — every handler whose start the record
 * gives as `through` or earlier (store ms, as the record's times are) has been called, the first
 * at `first` (this node's estimate of the store's time then: a start answered late calls its
 * handlers late); a page's items that wait for their gate (indexes into the page's items) are
 * listed apart, each with the time it was called, or none yet. A judge skips a fire time only
 * for a run the mark shows called by that fire time (claim/prev-run.ts, overlapping-run.ts,
 * gated-runs.ts); a run not marked yet is waited for and judged again.
 *
 * Written lazily — MARK_AFTER_MS after the first handler was called, and only if the run is
 * still going: a run that ends sooner needs none (its outcome on record says it ran, and a judge
 * reading before that waits). In a fan-out, its put and its delete ride the writes other runs
 * make anyway. One key per holder (lease key and fencing token, keys.ts `invoked`): a late
 * write of a holder that lost its lease marks only its own run. Kept when the run is abandoned
 * (a recovery's `since` names that run, and a judge asks for its mark); deleted with the run's
 * finish; expires with the history otherwise.
 */
export const MARK_AFTER_MS = 20;

/**
 * The mark a judge reads: handlers called whose start was `through` or earlier (store ms), the
 * first at `first` — except a page's items that wait for their gate (`gated`): each called at
 * its own time, or not yet (`undefined`).
 */
export interface InvokedState {
  through: number;
  first: number;
  gated: ReadonlyMap<number, number | undefined>;
}

/** `<through>|<first>[|<i>[=<at>],…]`: see the file comment. */
export function encodeInvoked(
  through: number,
  first: number,
  gated: ReadonlyMap<number, number | undefined>,
): string {
  const list = [...gated.keys()]
    .sort((a, b) => a - b)
    .map((i) => {
      const at = gated.get(i);
      return at === undefined ? String(i) : `${i}=${at}`;
    });
  return `${through}|${first}${list.length === 0 ? '' : `|${list.join(',')}`}`;
}

/** The mark as stored, or `undefined` for none (or one this build cannot read: treated as not marked). */
export function decodeInvoked(value: string | null | undefined): InvokedState | undefined {
  if (value === null || value === undefined) return undefined;
  const [t, f, list] = value.split('|', 3);
  const through = Number(t);
  const first = Number(f);
  if (!Number.isFinite(through) || !Number.isFinite(first)) return undefined;
  const gated = new Map<number, number | undefined>();
  for (const p of list ? list.split(',') : []) {
    const [i, at] = p.split('=', 2).map(Number) as [number, number | undefined];
    if (!Number.isInteger(i) || (at !== undefined && !Number.isFinite(at))) return undefined;
    gated.set(i, at);
  }
  return { through, first, gated };
}

/**
 * Whether the mark shows the handler that its record starts at `start` (store ms; `item`: a
 * page's item) called by `by`: the mark covers it (`through ≥ start`), and neither its start nor
 * its call came after `by` — its own call, if it waited for its gate; else the holder's first (a
 * handler called later than its round, by a node that lagged, is taken as called at its start:
 * START_ROUND_MS, page-starts.ts).
 */
export function calledBy(mark: InvokedState | undefined, start: number, by: number, item?: number): boolean {
  if (mark === undefined || start > mark.through || start > by) return false;
  if (item !== undefined && mark.gated.has(item)) {
    const at = mark.gated.get(item);
    return at !== undefined && at <= by;
  }
  return mark.first <= by;
}

/** The key of the mark of a run claimed on its own: its occurrence's lease, and its token. */
export function runMarkKey(occ: OccurrenceId, token: number): string {
  return keys.invoked(keys.occurrence(occ), token);
}

/**
 * The first of `runs` whose holder's mark shows it called by `by` (`of`: each run's mark key and
 * the start its record gives it). One getMany of their marks; none when `runs` is empty.
 */
export async function firstCalledBy<T>(
  store: Store,
  runs: readonly T[],
  by: number,
  of: (run: T) => { key: string; start: number },
): Promise<T | undefined> {
  if (runs.length === 0) return undefined;
  const marks = await store.getMany(runs.map((r) => of(r).key));
  return runs.find((r, i) => calledBy(decodeInvoked(marks[i]), of(r).start, by));
}

/** One holder's mark (a run's, or a page's for all its runs): see the file comment. */
export class InvokedMark {
  private through: number | undefined;
  private first: number | undefined;
  private readonly gated = new Map<number, number | undefined>();
  /** What was last sent (`undefined`: nothing yet), and the write on its way. */
  private sent: string | undefined;
  private writing: Promise<void> | undefined;
  private cancel: (() => void) | undefined;
  private over = false;
  /** Writes that failed in a row: the next waits longer (a store away is not asked every 200 ms). */
  private failures = 0;

  constructor(
    private readonly clock: Clock,
    private readonly writes: WriteBatcher,
    readonly key: string,
    private readonly ttlMs: number,
    /**
     * How long its write may wait for others to share their call (a page whose runs start in
     * rounds: its history writes' linger, page-starts.ts). Without it each round's new mark went
     * out at once and took the lingering history entries along: a jittered fan-out wrote history
     * and marks in a call per round (10 a second per node), not per linger (bench:scale
     * --variant jitter). A mark written later only makes a judge wait longer (it waits for what
     * is not marked yet).
     */
    private readonly lingerMs: () => number = () => 0,
  ) {}

  /** Page items that wait for their gate: each is marked with its own call (`invoked`), not the first. */
  wait(items: Iterable<number>): void {
    for (const i of items) this.gated.set(i, undefined);
  }

  /**
   * A handler was called at `at` (store ms, this node's estimate) that its record starts at
   * `start`; `item`: a page's item index.
   */
  invoked(start: number, at: number, item?: number): void {
    if (this.over) return;
    if (item !== undefined && this.gated.has(item)) {
      // Its first call stands (a retry's call is no later start of the run).
      if (this.gated.get(item) === undefined) this.gated.set(item, at);
    } else {
      if (this.through === undefined || start > this.through) this.through = start;
      if (this.first === undefined || at < this.first) this.first = at;
    }
    this.arm();
  }

  /** The next write, MARK_AFTER_MS from now (longer after failures), unless one is set or on its way. */
  private arm(): void {
    if (this.cancel !== undefined || this.writing !== undefined) return;
    const wait = this.failures === 0 ? MARK_AFTER_MS : Math.min(2_000, 100 * 2 ** this.failures);
    this.cancel = startTimer(this.clock, wait, () => {
      this.cancel = undefined;
      this.write();
    });
  }

  private write(): void {
    const value = this.value();
    if (value === undefined) return;
    if (value === this.sent) return;
    this.writing = this.writes
      .submit([{ op: 'put', key: this.key, value, ttlMs: this.ttlMs }], this.lingerMs())
      .then(
        () => {
          this.sent = value;
          this.failures = 0;
        },
        // Not marked: judges wait for this run (or its end) as for one that never said it started.
        () => {
          this.failures++;
        },
      )
      .finally(() => {
        this.writing = undefined;
        // Handlers called while it was on its way: marked again (no sooner than MARK_AFTER_MS).
        const now = this.value();
        if (now !== undefined && now !== this.sent) this.arm();
      });
  }

  /** The mark as it stands (`undefined`: over, or no handler called yet). */
  private value(): string | undefined {
    if (this.over || (this.first === undefined && ![...this.gated.values()].some((t) => t !== undefined)))
      return undefined;
    // Only gated items called so far: the others are covered by nothing (`0|0`).
    return encodeInvoked(this.through ?? 0, this.first ?? 0, this.gated);
  }

  /**
   * The run is over: nothing more is written. Resolves, once a write on its way has settled, to
   * the delete that goes with the run's finish (`undefined`: nothing was written). Abandoned
   * runs keep their mark (`keep`).
   */
  async end(keep = false): Promise<WriteOp | undefined> {
    this.over = true;
    this.cancel?.();
    this.cancel = undefined;
    await this.writing;
    if (keep || this.sent === undefined) return undefined;
    return { op: 'delete', key: this.key };
  }
}
