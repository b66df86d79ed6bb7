import type { Span } from '@opentelemetry/api';
import { LazyAbort } from '../../core/signals.js';
import type { WriteOp } from '../../store/types.js';
import { encodeHistory } from '../finish/history.js';
import { keys } from '../keys.js';
import type { HistoryEntry, RunEvent, RunStatus, SchedulerEvents } from '../types.js';
import { LATE_START_MS } from './fleet-limits.js';
import { callHandler, handlerSettled } from './handler-call.js';
import type { RunBook } from './run-book.js';
import { errorText, runFields, storeTimeNow } from './run-fields.js';
import { persist, recordLapse } from './run-persist.js';
import type { Claim, RunDeps, RunHooks } from './run-records.js';

/**
 * Whether a run may take the lean path ({@link runPageItem}) instead of `executeRun`: an item of a
 * page (its book writes nothing at the start: no in-flight record, no start batch), started now,
 * one attempt (no retries), no timeout, not `replace`, and under a rate limit started within
 * LATE_START_MS of its claim (its grant stands for its start; a later one asks the window again:
 * with its page's other late runs, {@link pageRunWay}, or in executeRun when launched alone) — the
 * runs of a fan-out. Anything else goes the general way. (Every rate-limited
 * run went that way: bench:scale --variant rate, 4 nodes, one run each, 135 µs of node CPU per
 * occurrence before, 126 after, 78 without the limit — the rest is the limiter's: three times the
 * page claims, of a third the size, and twice the due reads.)
 */
export function leanPageRun(deps: RunDeps, claim: Claim, book: RunBook): boolean {
  return pageRunWay(deps, claim, book) === 'lean';
}

/**
 * How a run of a page goes: `lean` ({@link leanPageRun}), `alone` (executeRun), or `late` — it
 * would go the lean way but for its lateness: rate-limited, launched more than LATE_START_MS after
 * its claim was sent. The late runs of one page ask the window again together, in one write, and
 * then start the lean way (page-batch.ts `late`). Each asked alone before, through executeRun: a
 * node slowed down (four node processes on two cores, profiled) launched its pages 250 ms after
 * their claims, every run of them asked the window in a store write of its own, in line behind
 * the others — that node slowed down further, and a fan-out of 100,000 under a rate limit that
 * never bound took 37 s instead of 13 (bench:scale --variant rate with CPU profiles).
 */
export function pageRunWay(deps: RunDeps, claim: Claim, book: RunBook): 'lean' | 'late' | 'alone' {
  const { spec } = deps;
  const shape =
    !book.wantsInflight &&
    claim.notBefore === undefined &&
    claim.startWrites === undefined &&
    spec.retries === 0 &&
    spec.timeoutMs === undefined &&
    spec.overlap !== 'replace';
  if (!shape) return 'alone';
  const late = deps.rateStart !== undefined && deps.clock.monotonic() - claim.sentAt > LATE_START_MS;
  return late ? 'late' : 'lean';
}

/**
 * One run of a page item, as `executeRun` runs it — the same records, events and order (start
 * event, handler, outcome, history in the finishing batch, the book's end) — without what such a
 * run never needs: no attempt loop, no race of promises per attempt, no per-run closures for
 * events it does not announce. Its handler's promise is followed by two callbacks; a halt (the
 * page's lease lost, or stop() giving up) while the handler goes ends the attempt at once, as
 * `executeRun`'s race does. In a fan-out this was a third of what a run allocated (executeRun:
 * ~4.5 KB per run, most of it its async frame and ~15 promises).
 *
 * Invariants kept from executeRun: the handler starts only while the claim surely holds
 * (`keep().held()`); an outcome is stored (retried while the store is away) before `succeeded` or
 * `failed` is emitted; a run halted before its outcome is recorded `abandoned` (and, when the
 * claim still holds — stop() —, only after its handler had up to `handlerSettleMs` to end).
 */
export function runPageItem(deps: RunDeps, claim: Claim, hooks: RunHooks, book: RunBook): Promise<void> {
  return new Promise<void>((resolve) => {
    new PageItemRun(deps, claim, hooks, book, resolve).start();
  });
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

class PageItemRun {
  private readonly halt = new LazyAbort();
  private leaseLost = false;
  /** The handler's outcome has been taken (by its settlement or by a halt): later news is ignored. */
  private decided = false;
  private handlerDone: Promise<unknown> | undefined;
  /** Its end (finish or abandon) is under way: the run's promise settles with it. */
  private ending = false;
  private entry!: Omit<HistoryEntry, 'status'>;
  private t0 = 0;
  private keeper!: { stop(): Promise<void>; held(): boolean };
  private unwatchStop: () => void = () => {};
  /** The attempt's `oncely.run` span (observe/tracing.ts), ended with its outcome. */
  private span: Span | undefined;

  private endSpan(status: RunStatus, error?: unknown): void {
    if (this.span) this.deps.tracing?.ended(this.span, status, error);
  }

  constructor(
    private readonly deps: RunDeps,
    private readonly claim: Claim,
    private readonly hooks: RunHooks,
    private readonly book: RunBook,
    private readonly resolve: () => void,
  ) {}

  start(): void {
    const { deps, claim } = this;
    try {
      this.keeper = this.book.keep((reason) => {
        this.leaseLost = true;
        this.stop(reason);
      });
      this.unwatchStop = deps.onStop((reason) => this.stop(reason));
      // A node frozen between the page's start write and here may wake after its lease lapsed and
      // another node recovered the occurrence: not started then (recovery decides).
      if (!this.keeper.held()) {
        this.leaseLost = true;
        this.track(this.abandon(undefined));
        return;
      }
      const startedAt = claim.startedAt ?? storeTimeNow(claim, deps.clock);
      const scheduledAt = claim.scheduledAt ?? claim.occ.fireTime;
      const entry = runFields(claim, deps.node) as Omit<HistoryEntry, 'status'>;
      entry.scheduledAt = scheduledAt === claim.occ.fireTime ? entry.fireTime : new Date(scheduledAt);
      entry.attempt = claim.attempt;
      entry.source = claim.source;
      entry.startedAt = new Date(startedAt);
      this.entry = entry;
      deps.started(claim.occ.job, claim.source, startedAt - scheduledAt, () => {
        const e = this.event() as SchedulerEvents['started'];
        e.startedAt = entry.startedAt;
        e.scheduledAt = entry.scheduledAt!;
        return e;
      });
      const { span, done } = callHandler(deps, claim, this.halt);
      this.book.invoked?.(claim, startedAt);
      this.span = span;
      this.t0 = deps.clock.monotonic();
      this.handlerDone = done;
      done.then(
        (value) => this.settled({ ok: true, value }),
        (error: unknown) => this.settled({ ok: false, error }),
      );
      // Halted while the run was being set up (a listener of `started` stopping the scheduler).
      if (this.halt.aborted && !this.decided) {
        this.decided = true;
        this.track(this.abandon(this.halt.reason));
      }
    } catch (err) {
      this.failedHere(err);
    }
  }

  /** The fields every event of this run has (built only when someone reads them). */
  private event(): RunEvent {
    const out = runFields(this.claim, this.deps.node, this.entry.fireTime) as RunEvent;
    out.attempt = this.claim.attempt;
    out.source = this.claim.source;
    return out;
  }

  /** The claim is lost, or stop() gives up: the attempt ends now; its handler is no longer waited for. */
  private stop(reason: unknown): void {
    if (this.halt.aborted) return;
    this.halt.abort(reason);
    if (this.handlerDone === undefined || this.decided) return;
    this.decided = true;
    this.track(this.abandon(reason));
  }

  private settled(outcome: Outcome): void {
    if (this.decided) return;
    this.decided = true;
    try {
      if (this.halt.aborted) {
        this.track(this.abandon(outcome.ok ? undefined : outcome.error));
        return;
      }
      const { deps, claim } = this;
      const finishedAt = new Date(storeTimeNow(claim, deps.clock));
      const durationMs = deps.clock.monotonic() - this.t0;
      const final = this.entry as HistoryEntry;
      let announce: (leaseLapsed: boolean) => void;
      this.endSpan(outcome.ok ? 'succeeded' : 'failed', outcome.ok ? undefined : outcome.error);
      if (outcome.ok) {
        final.status = 'succeeded';
        final.finishedAt = finishedAt;
        const value = outcome.value;
        if (typeof value === 'string') final.output = value.length > 4000 ? value.slice(-4000) : value;
        announce = (leaseLapsed) =>
          deps.succeeded(claim.occ.job, durationMs, () => {
            const e = this.event() as SchedulerEvents['succeeded'];
            e.durationMs = durationMs;
            if (leaseLapsed) e.leaseLapsed = true;
            return e;
          });
      } else {
        final.status = 'failed';
        final.finishedAt = finishedAt;
        final.error = errorText(outcome.error);
        const error = outcome.error;
        announce = (leaseLapsed) =>
          deps.emit('failed', {
            ...this.event(),
            error,
            status: 'failed',
            willRetry: false,
            durationMs,
            ...(leaseLapsed && { leaseLapsed }),
          });
      }
      this.track(this.finish(final, announce));
    } catch (err) {
      this.failedHere(err);
    }
  }

  private historyPut(entry: HistoryEntry): WriteOp {
    return {
      op: 'put',
      key: keys.history(this.claim.occ, entry.attempt),
      value: encodeHistory(entry),
      ttlMs: this.deps.historyRetentionMs,
    };
  }

  /** The handler's end: as executeRun's `finally` says it, before the outcome is written. */
  private handlerEnded(): void {
    this.hooks.handlerEnded?.();
    this.unwatchStop();
  }

  /** Stores the outcome (retried until stored or stop() gives up), then announces it and ends the book. */
  private async finish(final: HistoryEntry, announce: (leaseLapsed: boolean) => void): Promise<void> {
    const { deps, book, claim } = this;
    this.handlerEnded();
    const { ops, lapse } = book.finishOps(this.historyPut(final), undefined);
    const finishSpan = this.span && deps.tracing?.finish(this.span, final.status);
    let results: boolean[] = [];
    let stored = false;
    // One try first (the store is up nearly always), then the retrying way (reporting as
    // executeRun's does: the first failure, then every tenth).
    if (!deps.stopSignal.aborted) {
      try {
        results = await deps.writes.submit(ops, book.finishLingerMs);
        stored = true;
      } catch (err) {
        deps.emit('error', { error: err, during: `finish of ${claim.occ.job}` });
        stored = await persist(
          deps,
          `finish of ${claim.occ.job}`,
          async () => {
            results = await deps.writes.submit(ops, book.finishLingerMs);
          },
          deps.stopSignal,
          1,
        );
      }
    }
    const leaseLapsed = stored && (lapse !== undefined ? results[lapse] === false : book.lapsed?.() === true);
    if (leaseLapsed) await recordLapse(deps, claim, final, (e) => this.historyPut(e));
    if (finishSpan) deps.tracing?.finishEnded(finishSpan, stored);
    await this.keeper.stop();
    if (stored) announce(leaseLapsed);
    await book.ended?.(stored);
  }

  /**
   * Abandoned (the claim lost, or stop() giving up) or never started: recorded so (one try) and
   * the book ended, as executeRun does. Stopping with the claim still held, the handler gets a
   * little time to end first, so that no other node recovers it while it still runs.
   */
  private async abandon(error: unknown): Promise<void> {
    const { deps } = this;
    let final: HistoryEntry | undefined;
    if (this.handlerDone !== undefined) {
      if (!this.leaseLost) await handlerSettled(deps, this.handlerDone);
      final = this.entry as HistoryEntry;
      final.status = 'abandoned';
      final.finishedAt = new Date(storeTimeNow(this.claim, deps.clock));
      final.error = errorText(error ?? this.halt.reason);
      // Lease lost: the handler may still be going while another node runs (run.ts says why).
      if (this.leaseLost) final.leaseLapsed = true;
      this.endSpan('abandoned', error ?? this.halt.reason);
      this.handlerEnded();
    } else {
      this.hooks.handlerEnded?.();
      this.unwatchStop();
    }
    await this.keeper.stop();
    await deps.writes
      .submit(this.book.abandonOps(final ? this.historyPut(final) : undefined))
      .catch((err) => deps.emit('error', { error: err, during: `release of ${this.claim.occ.job}` }));
    await this.book.ended?.(false);
  }

  /** The run's promise settles when `work` has (an error in it is reported, as executeRun reports its own). */
  private track(work: Promise<void>): void {
    this.ending = true;
    work.then(this.resolve, (err: unknown) => {
      this.deps.emit('error', { error: err, during: `run of ${this.claim.occ.job}` });
      this.resolve();
    });
  }

  /**
   * An error of this code (not the handler's): reported, and the run ends as executeRun's does
   * after one — abandoned, its book ended (a page waits for each of its runs to end) — unless its
   * outcome was already being stored.
   */
  private failedHere(err: unknown): void {
    this.deps.emit('error', { error: err, during: `run of ${this.claim.occ.job}` });
    if (this.ending) return;
    this.decided = true;
    this.track(this.abandon(undefined));
  }
}
