import type { Span } from '@opentelemetry/api';
import { deferOn } from '../../core/clock.js';
import type { HistoryEntry, RunEvent, SchedulerEvents } from '../types.js';
import { entryOf, historyPut, type Item, newItem } from './batch-item.js';
import { callHandler, handlerSettled } from './handler-call.js';
import type { RunBook } from './run-book.js';
import { errorText, runFields, storeTimeNow } from './run-fields.js';
import { persist, recordLapse } from './run-persist.js';
import type { Claim, RunDeps } from './run-records.js';

/** What the batch tells its caller about run `k` (runs.ts keeps slots and bookkeeping by it). */
export interface BatchHooks {
  /** No handler of run `k` will run any more: only its finish is left (frees its slot). */
  handlerEnded(k: number): void;
  /** Run `k` has ended: its outcome stored (or given up on) and its book told. */
  ended(k: number): void;
}

/**
 * The lean runs of one page that start together (claim/page-claims.ts): what `runPageItem` does
 * for one run (page-item-run.ts: the same records, events and order), done once for all of them
 * where it is the page's and not the run's — one look that the page's claim still holds, one
 * keep-alive hook, one stop hook, one write group for the history entries of the runs that end in
 * one turn of the event loop, one promise for stop() to wait on. Per run only its context, its
 * handler's promise, its events, metrics and span, and its history entry. In a fan-out the
 * per-run objects, closures and write groups were about a quarter of the node's CPU per run.
 *
 * Invariants (as runPageItem's, per run): a handler starts only while the page's claim surely
 * holds; an outcome is stored (retried while the store is away) before `succeeded` or `failed` is
 * emitted; a run halted before its outcome is recorded `abandoned` (when the claim still holds —
 * stop() — only after its handler had up to `handlerSettleMs` to end). The halt is the page's:
 * the page's lease lost, or stop() giving up, halts every run of it at once, as each run's own
 * keep-alive and stop hook did.
 */
export function runPageBatch(
  deps: RunDeps,
  claims: readonly Claim[],
  hooks: BatchHooks,
  book: RunBook,
  late = false,
): Promise<void> {
  return new Promise<void>((resolve) => {
    new PageBatch(deps, claims, hooks, book, resolve, late).start();
  });
}

class PageBatch {
  /** The page's claim lost, or stop() gave up: why (every run is halted with it). */
  private stopped: { reason: unknown } | undefined;
  private leaseLost = false;
  private readonly items: Item[];
  /** Runs not ended yet; the batch's promise settles at 0. */
  private open: number;
  /** Runs whose handler may still run; the stop hook goes at 0 (the keep-alive hook when the last run ends). */
  private handlersLeft: number;
  private keeper!: { stop(): Promise<void>; held(): boolean };
  private unwatchStop: () => void = () => {};
  /** Outcomes waiting for this turn's write group. */
  private finished: Item[] = [];
  /** (late) Aborted by the page's halt: the runs' ask for starts in the rate window ends. */
  private waiting: AbortController | undefined;

  constructor(
    private readonly deps: RunDeps,
    claims: readonly Claim[],
    private readonly hooks: BatchHooks,
    private readonly book: RunBook,
    private readonly resolve: () => void,
    /** The runs were launched late for their rate grant: they ask the window again first (`startLate`). */
    private readonly late: boolean,
  ) {
    this.items = claims.map(newItem);
    this.open = claims.length;
    this.handlersLeft = claims.length;
  }

  start(): void {
    try {
      this.keeper = this.book.keep((reason) => {
        this.leaseLost = true;
        this.stop(reason);
      });
      this.unwatchStop = this.deps.onStop((reason) => this.stop(reason));
      // A node frozen between the page's start write and here may wake after its lease lapsed and
      // another node recovered the page: nothing started then (recovery decides).
      if (!this.keeper.held()) {
        this.leaseLost = true;
        for (const it of this.items) {
          it.decided = true;
          this.track(it, this.abandon(it, undefined));
        }
        return;
      }
      if (this.late && this.deps.rateStart) {
        // Their handlers may be called well after the page's others: the page's mark lists them
        // apart, said in this turn (the launch's), before any mark of the page goes out.
        for (const it of this.items) this.book.callsLate?.(it.claim);
        this.track(undefined, this.startLate(this.deps.rateStart));
        return;
      }
    } catch (err) {
      for (const it of this.items) this.failedHere(it, err);
      return;
    }
    for (const it of this.items) {
      try {
        this.startOne(it);
      } catch (err) {
        this.failedHere(it, err);
      }
    }
    // Halted while the runs were being set up (a listener of `started` stopping the scheduler).
    if (this.stopped) for (const it of this.items) this.halted(it, this.stopped.reason);
  }

  private startOne(it: Item): void {
    const { deps } = this;
    const { claim } = it;
    const startedAt = claim.startedAt ?? storeTimeNow(claim, deps.clock);
    const scheduledAt = claim.scheduledAt ?? claim.occ.fireTime;
    it.startedAt = startedAt;
    it.scheduledAt = scheduledAt;
    deps.started(claim.occ.job, claim.source, startedAt - scheduledAt, () => {
      const e = this.event(it) as SchedulerEvents['started'];
      e.startedAt = new Date(startedAt);
      e.scheduledAt = scheduledAt === claim.occ.fireTime ? e.fireTime : new Date(scheduledAt);
      return e;
    });
    const { span, done } = callHandler(deps, claim, it.halt);
    this.book.invoked?.(claim, startedAt);
    it.span = span;
    it.t0 = deps.clock.monotonic();
    it.handlerDone = done;
    done.then(
      (value) => this.settled(it, true, value),
      (error: unknown) => this.settled(it, false, error),
    );
  }

  /**
   * (late) The runs start as the rate window grants them (fleet-limits.ts `rateStart`): one ask for
   * all that still wait, the oldest start's place in line held meanwhile; those granted start at
   * once, in page order. Those the page's halt (its lease lost, stop()) finds waiting end
   * abandoned without having started, as a run waiting alone does (recovery decides).
   */
  private async startLate(ask: NonNullable<RunDeps['rateStart']>): Promise<void> {
    const waiting = new AbortController();
    this.waiting = waiting;
    let pending: readonly Item[] = this.items;
    let start = Number.POSITIVE_INFINITY;
    for (const it of pending) start = Math.min(start, it.claim.scheduledAt ?? it.claim.occ.fireTime);
    try {
      while (pending.length > 0 && !this.stopped) {
        const granted = await ask(waiting.signal, start, pending.length);
        if (this.stopped || granted <= 0) break;
        // A node frozen while it waited may wake after the page's lease lapsed (see start()).
        if (!this.keeper.held()) {
          this.leaseLost = true;
          break;
        }
        const now = pending.slice(0, granted);
        pending = pending.slice(granted);
        for (const it of now) {
          try {
            this.startOne(it);
          } catch (err) {
            this.failedHere(it, err);
          }
        }
      }
    } finally {
      for (const it of pending) this.halted(it, this.stopped?.reason);
    }
  }

  /** The fields every event of run `it` has (built only when someone reads them). */
  private event(it: Item): RunEvent {
    const out = runFields(it.claim, this.deps.node) as RunEvent;
    out.attempt = it.claim.attempt;
    out.source = it.claim.source;
    return out;
  }

  /** The page's claim is lost, or stop() gives up: every run going ends now (its handler is no longer waited for). */
  private stop(reason: unknown): void {
    if (this.stopped) return;
    this.stopped = { reason };
    this.waiting?.abort(reason);
    for (const it of this.items) {
      it.halt.abort(reason);
      if (it.handlerDone !== undefined) this.halted(it, reason);
    }
  }

  private halted(it: Item, reason: unknown): void {
    if (it.decided) return;
    it.decided = true;
    this.track(it, this.abandon(it, reason));
  }

  private settled(it: Item, ok: boolean, value: unknown): void {
    if (it.decided) return;
    it.decided = true;
    try {
      if (it.halt.aborted) {
        this.track(it, this.abandon(it, ok ? undefined : value));
        return;
      }
      const { deps } = this;
      it.status = ok ? 'succeeded' : 'failed';
      it.finishedAt = storeTimeNow(it.claim, deps.clock);
      it.durationMs = deps.clock.monotonic() - it.t0;
      if (ok) {
        if (typeof value === 'string') it.output = value.length > 4000 ? value.slice(-4000) : value;
      } else {
        it.errorText = errorText(value);
        it.error = value;
      }
      if (it.span) deps.tracing?.ended(it.span, it.status, ok ? undefined : value);
      this.handlerEnded(it);
      it.ending = true;
      this.finished.push(it);
      // The outcomes of one turn go in one write group (the write batch sends groups of a turn together anyway).
      if (this.finished.length === 1) deferOn(deps.clock, () => this.track(undefined, this.finish()));
    } catch (err) {
      this.failedHere(it, err);
    }
  }

  /** Run `it`'s handler is over (as executeRun's `finally` says it): its slot is free. */
  private handlerEnded(it: Item): void {
    if (it.handlerOver) return;
    it.handlerOver = true;
    this.hooks.handlerEnded(it.k);
    if (--this.handlersLeft === 0) this.unwatchStop();
  }

  /** Stores this turn's outcomes (retried until stored or stop() gives up), then announces each and ends its run. */
  private async finish(): Promise<void> {
    const { deps, book } = this;
    const group = this.finished;
    this.finished = [];
    const what = `finish of ${group[0]!.claim.occ.job}`;
    let stored = false;
    let spans: (Span | undefined)[] = [];
    try {
      // A page's book adds nothing to a run's history entry and no op to judge a lapse by (its
      // `lapsed()` says it): the group is the entries.
      const ops = group.flatMap((it) => book.finishOps(historyPut(it, this.deps), undefined).ops);
      spans = group.map((it) => (it.span ? deps.tracing?.finish(it.span, it.status) : undefined));
      // One try first (the store is up nearly always), then the retrying way (reporting as
      // executeRun's does: the first failure, then every tenth).
      if (!deps.stopSignal.aborted) {
        try {
          await deps.writes.submit(ops, book.finishLingerMs);
          stored = true;
        } catch (err) {
          deps.emit('error', { error: err, during: what });
          stored = await persist(
            deps,
            what,
            () => deps.writes.submit(ops, book.finishLingerMs),
            deps.stopSignal,
            1,
          );
        }
      }
    } catch (err) {
      deps.emit('error', { error: err, during: what });
    }
    const leaseLapsed = stored && book.lapsed?.() === true;
    for (let i = 0; i < group.length; i++) {
      const it = group[i]!;
      try {
        if (leaseLapsed)
          await recordLapse(deps, it.claim, entryOf(it, this.deps.node, it.status, it.finishedAt), (e) =>
            historyPut(it, this.deps, e),
          );
        const span = spans[i];
        if (span) deps.tracing?.finishEnded(span, stored);
        if (stored) this.announce(it, leaseLapsed);
        await book.ended?.(stored);
      } catch (err) {
        deps.emit('error', { error: err, during: `run of ${it.claim.occ.job}` });
      }
      this.ended(it);
    }
  }

  private announce(it: Item, leaseLapsed: boolean): void {
    const { deps } = this;
    const { durationMs } = it;
    if (it.status === 'succeeded') {
      deps.succeeded(it.claim.occ.job, durationMs, () => {
        const e = this.event(it) as SchedulerEvents['succeeded'];
        e.durationMs = durationMs;
        if (leaseLapsed) e.leaseLapsed = true;
        return e;
      });
      return;
    }
    deps.emit('failed', {
      ...this.event(it),
      error: it.error,
      status: 'failed',
      willRetry: false,
      durationMs,
      ...(leaseLapsed && { leaseLapsed }),
    });
  }

  /**
   * Run `it` abandoned (the claim lost, or stop() giving up) or never started: recorded so (one
   * try) and its book ended, as runPageItem does. Stopping with the claim still held, its handler
   * gets a little time to end first, so that no other node recovers it while it still runs.
   */
  private async abandon(it: Item, error: unknown): Promise<void> {
    const { deps } = this;
    // Ended whatever happens here (a tracer that throws included): the page waits for each run.
    try {
      let final: HistoryEntry | undefined;
      if (it.handlerDone !== undefined) {
        if (!this.leaseLost) await handlerSettled(deps, it.handlerDone);
        final = entryOf(it, this.deps.node, 'abandoned', storeTimeNow(it.claim, deps.clock));
        final.error = errorText(error ?? it.halt.reason);
        // Lease lost: the handler may still be going while another node runs (run.ts says why).
        if (this.leaseLost) final.leaseLapsed = true;
      }
      this.handlerEnded(it);
      if (final && it.span) deps.tracing?.ended(it.span, 'abandoned', error ?? it.halt.reason);
      await deps.writes
        .submit(this.book.abandonOps(final ? historyPut(it, this.deps, final) : undefined))
        .catch((err) => deps.emit('error', { error: err, during: `release of ${it.claim.occ.job}` }));
      await this.book.ended?.(false);
    } finally {
      this.ended(it);
    }
  }

  private ended(it: Item): void {
    this.hooks.ended(it.k);
    if (--this.open > 0) return;
    if (this.keeper) void this.keeper.stop().then(this.resolve, this.resolve);
    else this.resolve();
  }

  /** `work` (a run's end, or a turn's finish) runs on its own; an error in it is reported. Each path ends its runs itself. */
  private track(it: Item | undefined, work: Promise<void>): void {
    if (it) it.ending = true;
    work.catch((err: unknown) => {
      this.deps.emit('error', { error: err, during: `run of ${(it ?? this.items[0]!).claim.occ.job}` });
    });
  }

  /**
   * An error of this code (not the handler's) while run `it` was set up or settled: reported,
   * and the run ends abandoned, its book ended (a page waits for each of its runs to end).
   */
  private failedHere(it: Item, err: unknown): void {
    this.deps.emit('error', { error: err, during: `run of ${it.claim.occ.job}` });
    if (it.ending) return;
    it.decided = true;
    this.track(it, this.abandon(it, undefined));
  }
}
