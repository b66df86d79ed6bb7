import { type Clock, type StoreClock, startTimer } from '../../core/clock.js';
import type { Store } from '../../store/types.js';
import type { JobSpec } from '../job-options.js';
import { countsRuns, inUse, type Local, newLocal, oldestBut } from './limit-local.js';
import type { WaitPath } from './limit-place.js';
import { type LimitRecord, reserveIn, WAIT_HOLD_MS } from './limit-record.js';
import { keepSpare, takeSpare } from './limit-spare.js';
import { type LimitWriter, writeLimit } from './limit-write.js';

/** After runs ended here, their permits go back to the fleet within this long (one write for all). */
const RETURN_AFTER_MS = 15;
/** A write that failed (the store away) is tried again after this long. */
const RETRY_AFTER_FAILURE_MS = 1_000;
/** A rate limit's grant is used within this long of its answer, or given back unused (see `stale`). */
export const MAX_GRANT_AGE_MS = 100;
/** A rate-limited start this long after its claim was sent asks for a start again (see `rateStart`). */
export const LATE_START_MS = 250;

/** What one reservation got: `granted` starts now; the rest waits until `retryAt` (store time). */
export interface Reservation {
  granted: number;
  retryAt: number | undefined;
  /** The store time it was granted at, and the node's launch count then (for `settled`). */
  at: number;
  launched: number;
  /** Local monotonic time the grant was answered (see `stale`). */
  answeredAt: number;
}

/**
 * A job's `maxConcurrency` and `rateLimit`, fleet-wide (docs/limits.md). One record per limited
 * job, `lim|<job>|<seq>` (limit-record.ts): each live node's permits in use, with the store time
 * until which they count, and the recent starts. It changes only by compare-and-move — a
 * `claimPage` moving `lim|<job>|<seq>` to `<seq + 1>`, which exactly one of racing nodes wins —
 * so no update is lost. Reservations are made per tick and per page, never per occurrence: a
 * tick reserves what its claims may start, gives back what they did not win, and the permits of
 * runs that ended go back in one write shortly after (RETURN_AFTER_MS).
 *
 * Invariants: every run of a limited job launched here counts in `held` from its launch until
 * its handler ends (recoveries too, which are not reserved: they may exceed the limit by the
 * runs a dead node left, while its own entry still counts them). A node's entry counts until
 * `lockAtMostFor` after it was last written and is refreshed while runs go on, so a dead node's
 * permits come back as its runs' leases would; a node cut off from the store longer than that
 * may run beside permits handed out again (as a run whose lease lapsed: its signal aborts).
 */
export class FleetLimits {
  private readonly jobs = new Map<string, Local>();
  private stopped = false;

  private readonly writer: LimitWriter;

  constructor(
    store: Store,
    private readonly node: string,
    private readonly clock: Clock,
    private readonly storeClock: StoreClock,
    random: () => number,
    onError: (err: unknown, during: string) => void,
  ) {
    this.writer = { store, node, clock, storeClock, random, onError };
  }

  /**
   * Whether the job has a fleet limit (reservations needed before its claims, a permit per run).
   * `define()` refuses limits on a store without pages (fleet-limit-spec.ts).
   */
  limited(spec: JobSpec): boolean {
    return spec.limits !== undefined;
  }

  /**
   * Reserves up to `want` starts of the job now. Grants nothing (and says when to try again)
   * while the fleet is at its limit, or when the record could not be written. `order`: the
   * wanted work's starts, oldest first, to wait in line by (limit-record.ts, {@link waitsFrom}).
   */
  reserve(spec: JobSpec, want: number, order?: readonly number[]): Promise<Reservation> {
    const l = this.local(spec);
    return this.serial(l, async () => {
      const none = { granted: 0, at: 0, launched: 0, answeredAt: 0 };
      if (want <= 0 || this.stopped) return { ...none, retryAt: undefined };
      // A permit a run here just freed, kept for this work (limit-spare.ts): no write.
      const mono = this.clock.monotonic();
      const spare = takeSpare(l, this.node, want, order?.[0], this.storeClock.estimate(), mono);
      if (spare > 0)
        return { granted: spare, retryAt: undefined, at: 0, launched: l.launched, answeredAt: mono };
      let grant: Reservation = { ...none, retryAt: undefined };
      const wrote = await this.write(l, (rec, now) => {
        const margin = this.storeClock.errorBound();
        // This node's runs waiting for a start in the rate window (rateStart) go first.
        const local = { own: l.place.current(now, 'start')?.[0], ahead: oldestBut(l.starting) };
        const free = reserveIn(rec, now, this.node, spec.limits!, this.inUse(l), want, margin, order, local);
        grant = { ...free, launched: l.launched, answeredAt: 0 };
        return { count: this.inUse(l) + (countsRuns(spec) ? free.granted : 0), granted: free.granted };
      });
      if (!wrote) return { ...none, retryAt: this.storeClock.estimate() + 50 };
      l.reserved += grant.granted;
      return { ...grant, answeredAt: this.clock.monotonic() };
    });
  }

  /**
   * Whether `r`, a grant of a rate-limited job, is too old to use: its starts are counted at the
   * grant's instant (limit-record.ts), so they must follow it closely — a tick whose other
   * reservation waited a second for a lost request claimed with the grant it had got a second
   * before, and another node's grant after the window had moved on made 5 starts in 750 ms under
   * 3 per second (simulator, lost replies only). A stale grant is not used; `settled` gives it
   * back, and the next tick asks again.
   */
  stale(spec: JobSpec, r: Reservation): boolean {
    return (
      spec.limits?.rate !== undefined &&
      r.granted > 0 &&
      this.clock.monotonic() - r.answeredAt > MAX_GRANT_AGE_MS
    );
  }

  /**
   * One start of a rate-limited job in the window, now, waited for: for a start its claim's grant
   * does not stand for — a retry of a failed attempt, or a first attempt about to start more than
   * {@link LATE_START_MS} after its claim was sent (its start record had to be written again: the
   * store failed or a reply was lost), which its grant counted a second or more before (simulator,
   * lost replies only, seed 59: 4 starts in 750 ms under 3 per second). A late start's grant stays
   * counted (too long, never too short). Concurrency is not asked again: the run holds its permit
   * from its launch to its last attempt's end. Returns when granted, or when `signal` aborts.
   *
   * It waits in line by `start` (its occurrence's start, fire time plus jitter) like the due work
   * of every node: it holds this node's place (path `start`) while it waits, and newer work
   * anywhere yields to it. Asking first come, first served, a retry lost the window to the due
   * ticks of three nodes asking at the same instant for 9 s on end, and the fire time its gate
   * held back was lost (simulator, test/simulate-limits-replies.test.ts "a retry is a start":
   * 6 of seeds 1-40).
   *
   * `count` starts of one start time at once (a page's runs that came late together, page-batch.ts):
   * one ask for all of them, granted as many as the window has room for (at least one). Returns
   * how many were granted; 0 when `signal` aborted or the node stopped first.
   */
  async rateStart(spec: JobSpec, signal: AbortSignal, start: number, count = 1): Promise<number> {
    const rate = spec.limits?.rate;
    if (!rate) return count;
    const l = this.local(spec);
    const rateOnly = { maxConcurrency: undefined, rate };
    l.starting.push(start);
    try {
      while (!signal.aborted && !this.stopped) {
        let grant: { granted: number; retryAt: number | undefined } = { granted: 0, retryAt: undefined };
        const wrote = await this.serial(l, () =>
          this.write(l, (rec, now) => {
            const local = { own: start, ahead: oldestBut(l.starting, start) };
            const margin = this.storeClock.errorBound();
            const order = new Array<number>(count).fill(start);
            grant = reserveIn(rec, now, this.node, rateOnly, 0, count, margin, order, local);
            return { count: this.inUse(l), granted: grant.granted };
          }),
        );
        if (wrote && grant.granted > 0) return grant.granted;
        // Refused: its place in line is taken now (a write RETURN_AFTER_MS later) and held until
        // it asks again. Not before its first ask: a place written with a grant stayed in the
        // record after it, holding newer work elsewhere back until it lapsed (a window later:
        // an hour, for a limit per hour).
        const wait = wrote && grant.retryAt !== undefined ? grant.retryAt - this.storeClock.estimate() : 0;
        this.holdStartPlace(l, this.storeClock.estimate() + Math.max(10, wait));
        await this.clock.sleep(Math.max(10, wait), signal).catch(() => {});
      }
      return 0;
    } finally {
      const at = l.starting.indexOf(start);
      if (at >= 0) l.starting.splice(at, 1);
      if (l.starting.length === 0) {
        l.startHeldUntil = 0;
        if (l.place.set('start', undefined, 0)) this.soon(l);
      } else this.holdStartPlace(l, 0); // the oldest of those left, held as long as it was
    }
  }

  /**
   * The place of the runs waiting here for a start in the rate window: the oldest, held past the
   * last ask any of them is to make (`askAt`, or an earlier call's).
   */
  private holdStartPlace(l: Local, askAt: number): void {
    const oldest = oldestBut(l.starting);
    if (oldest === undefined) return;
    l.startHeldUntil = Math.max(l.startHeldUntil, askAt + WAIT_HOLD_MS);
    if (l.place.set('start', oldest, l.startHeldUntil)) this.soon(l);
  }

  /**
   * The claims that `r` was reserved for are over: what they launched counts in `held`, the rest
   * goes back — permits, and for a rate limit the starts not used (judged by the launches since
   * the reservation, of any kind: never fewer than this grant's own, so never too many back).
   */
  settled(spec: JobSpec, r: Reservation): void {
    if (r.granted <= 0) return;
    const l = this.local(spec);
    l.reserved = Math.max(0, l.reserved - r.granted);
    const unused = r.granted - Math.min(r.granted, l.launched - r.launched);
    if (unused > 0 && spec.limits?.rate) l.unused.push([r.at, unused]);
    this.soon(l);
  }

  /** A run of the job was launched here (from its claim to its handler's end). */
  started(spec: JobSpec): void {
    const l = this.local(spec);
    l.held++;
    l.launched++;
  }

  /**
   * A claim of the job got no answer (claim/unanswered.ts): it may have been granted, and is
   * started when the node learns so, without a new reservation. It keeps a permit until then
   * ({@link unkeep}), and counts as a launch of the grant it was reserved under, so `settled`
   * gives back neither its permit nor its start. Before, the permit went back with the grant and
   * the adopted run started beyond the limit (simulator, lost replies only: 3 and 4 runs at once
   * under maxConcurrency 2, seeds 5 and 30 of test/simulate-limits-replies.test.ts).
   *
   * Kept until `until` (local monotonic time) at the latest: the claim's lease has run out then,
   * whatever became of it — adopted after that, its start is refused by the store. Kept until the
   * node asked the store, a permit outlived any use: a node whose ticks failed one after another (a
   * lost reply in each) backed off for 16 s and more, asking nothing, while its refreshed entry
   * still counted the permit; two such nodes held both permits of a `maxConcurrency: 2` job from
   * 15 s to the end (simulator, mix5 seed 421; test/fleet-limits-kept.test.ts).
   */
  keep(spec: JobSpec, until: number): void {
    const l = this.local(spec);
    l.kept.push(until);
    l.launched++;
    this.soon(l);
  }

  /** The claim `keep` held a permit for (until `until`) is settled: started (now in `held`), or not ours. */
  unkeep(spec: JobSpec, until: number): void {
    const l = this.local(spec);
    const at = l.kept.indexOf(until);
    if (at >= 0) l.kept.splice(at, 1);
    this.soon(l);
  }

  /** A run's handler ended: its permit goes back to the fleet shortly, or stays here for waiting work (then `true`). */
  ended(spec: JobSpec): boolean {
    const l = this.local(spec);
    l.held = Math.max(0, l.held - 1);
    const kept = keepSpare(l, this.node, this.storeClock.estimate(), this.clock.monotonic());
    this.soon(l);
    return kept;
  }

  /**
   * Where `path` last found the job's work here waiting for permits: `start` of the oldest it
   * could not claim for want of one (`undefined`: none), asked for again by `askAt` (store time).
   * The node's place in line (limit-record.ts `w`), the earliest of its paths', is stored within
   * RETURN_AFTER_MS when it moved and held WAIT_HOLD_MS past `askAt`: a waiter that stops asking
   * (it died, its work was claimed elsewhere) holds newer work back no longer than that.
   */
  waitsFrom(spec: JobSpec, path: WaitPath, start: number | undefined, askAt: number): void {
    const l = this.local(spec);
    if (l.place.set(path, start, askAt + WAIT_HOLD_MS)) this.soon(l);
  }

  /**
   * Whether the job's last due tick here found work it could not claim for want of permits (its
   * tick place stands): what of it is left then waits for permits, not for this node's slots.
   */
  waitsForPermits(job: string): boolean {
    return this.jobs.get(job)?.place.waits('tick', this.storeClock.estimate()) === true;
  }

  /**
   * A due tick reserved for the jobs `reserved` (their tick places set by {@link waitsFrom}): the
   * other jobs had no due work, and their tick places go.
   */
  tickWaits(reserved: ReadonlySet<string>): void {
    for (const l of this.jobs.values())
      if (!reserved.has(l.spec.name) && l.place.set('tick', undefined, 0)) this.soon(l);
  }

  /** stop(), once every run ended: the permits still stored go back now (best effort), no timer stays. */
  async stop(): Promise<void> {
    this.stopped = true;
    try {
      await Promise.all(
        [...this.jobs.values()].map((l) => {
          l.cancelTimer?.();
          l.cancelTimer = undefined;
          // Claims kept unanswered will not start here now: their recovery elsewhere needs the permits.
          l.kept = [];
          l.spare = 0;
          // Nor does anything wait here: its place in line goes with this write, or lapses.
          l.place.clear();
          return l.stored > 0
            ? this.serial(l, () => this.write(l, () => ({ count: this.inUse(l), granted: 0 })))
            : undefined;
        }),
      );
    } finally {
      this.stopped = false; // a later start()
    }
  }

  /** The permits the job's entry counts now (limit-local.ts, its kept ones while they last). */
  private inUse(l: Local): number {
    return inUse(l, this.clock.monotonic());
  }

  private local(spec: JobSpec): Local {
    let l = this.jobs.get(spec.name);
    if (!l) {
      l = newLocal(spec);
      this.jobs.set(spec.name, l);
    }
    // define() again with other limits: the newest spec rules.
    l.spec = spec;
    return l;
  }

  private serial<T>(l: Local, fn: () => Promise<T>): Promise<T> {
    const next = l.chain.then(fn, fn);
    l.chain = next.catch(() => {});
    return next;
  }

  /**
   * Returns what is stored but no longer in use (RETURN_AFTER_MS from now), or refreshes the
   * entry before it stops counting while runs go on (half a lease ahead).
   */
  private soon(l: Local, afterMs?: number): void {
    if (this.stopped) return;
    const mono = this.clock.monotonic();
    const count = inUse(l, mono);
    let inMs: number;
    if (afterMs !== undefined) inMs = afterMs;
    else if (count < l.stored || l.unused.length > 0 || l.place.moved(this.storeClock.estimate()))
      inMs = RETURN_AFTER_MS;
    else if (count > 0)
      inMs = Math.max(
        RETURN_AFTER_MS,
        l.storedUntil - this.storeClock.estimate() - l.spec.lockAtMostForMs / 2,
      );
    else return;
    // A kept permit's end is a return too (see keep).
    for (const until of l.kept) if (until > mono) inMs = Math.min(inMs, until - mono + 1);
    if (l.spare > 0 && l.spareUntil > mono) inMs = Math.min(inMs, l.spareUntil - mono + 1);
    // One timer per job: a write armed sooner stores this too (a run's end must not cost a timer).
    const at = mono + inMs;
    if (l.cancelTimer && l.timerAt <= at) return;
    l.cancelTimer?.();
    l.timerAt = at;
    l.cancelTimer = startTimer(this.clock, inMs, () => {
      l.cancelTimer = undefined;
      void this.serial(l, () => this.write(l, () => ({ count: this.inUse(l), granted: 0 }))).then((ok) =>
        this.soon(l, ok ? undefined : RETRY_AFTER_FAILURE_MS),
      );
    });
  }

  /** One compare-and-move of the job's record (limit-write.ts). */
  private write(
    l: Local,
    update: (rec: LimitRecord, now: number) => { count: number; granted: number },
  ): Promise<boolean> {
    return writeLimit(this.writer, l, update);
  }
}
