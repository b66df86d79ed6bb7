import type { Span } from '@opentelemetry/api';
import { OncelyError } from '../../core/errors.js';
import { INTERNAL_ABORT, LazyAbort, type LinkedSignal, linkSignals } from '../../core/signals.js';
import type { WriteOp } from '../../store/types.js';
import { encodeHistory } from '../finish/history.js';
import { keys } from '../keys.js';
import type { HistoryEntry, RunEvent, RunStatus } from '../types.js';
import { LATE_START_MS } from './fleet-limits.js';
import { handlerSettled } from './handler-call.js';
import { jobContext } from './job-context.js';
import { claimBook, type RunBook } from './run-book.js';
import { errorText, inflightText, retryWait, runFields, storeTimeNow } from './run-fields.js';
import { persist, persistStart, recordLapse } from './run-persist.js';
import type { Claim, RunDeps, RunHooks } from './run-records.js';
import { startAt } from './start-at.js';

export { retryWait } from './run-fields.js';
export type { Claim, InflightRecord, RunDeps, RunHooks } from './run-records.js';

/**
 * Runs one claimed occurrence to its end: keeps its leases alive, calls the handler with retries
 * and a timeout, and records the outcome. Three store round trips in all (fewer when other runs
 * share the batches): the claim, the in-flight record, and one finishing batch.
 *
 * Ordering (each step survives a crash before the next):
 *  1. claim (occurrence lease + overlap gate), by the caller;
 *  2. in-flight record and high-water mark, in one batch, retried while the claim holds — the
 *     handler never starts unrecorded, so a crash from here on is recovered from the record (and
 *     the mark keeps the misfire policy away from it); a claim that could not be recorded before
 *     its lease ran out is given up unrun, and its fire time, above the mark, counts as missed;
 *  3. handler (attempts and retries; each failed attempt that will be retried gets its history);
 *  4. one batch: history final + in-flight record deleted + occurrence released
 *     with a long hold ("done") + gate released. Retried through store outages while the leases
 *     are kept alive, so a store that was down when the handler ended neither re-runs the
 *     occurrence nor leaves the gate blocking the next fire times. A crash between 3 and 4 is
 *     recovered (at-least-once); recovery skips occurrences whose final history exists.
 * `succeeded`/`failed` are emitted once the outcome is stored.
 */
export async function executeRun(
  deps: RunDeps,
  claim: Claim,
  hooks: RunHooks = {},
  book: RunBook = claimBook(deps, claim),
): Promise<void> {
  const { spec, node, clock, emit, writes } = deps;
  // Aborted when the leases could not be kept, or when stop() gives up: the run must end. One
  // per run, aborted directly by both (no listeners to add and remove per run); its AbortSignal
  // is made only if the handler (or a retry's sleep, or a timeout) asks for it.
  const halt = new LazyAbort();
  /** Rejects the current attempt's wait for its handler (set while a handler without a timeout runs). */
  let haltAttempt: ((reason: unknown) => void) | undefined;
  let leaseLost = false;
  const stopRun = (reason: unknown) => {
    if (halt.aborted) return;
    halt.abort(reason);
    haltAttempt?.(reason);
  };
  const keeper = book.keep((reason) => {
    leaseLost = true;
    stopRun(reason);
  });
  const unwatchStop = deps.onStop(stopRun);
  const links: LinkedSignal[] = [];
  const base = runFields(claim, node) as Omit<RunEvent, 'attempt' | 'source'>;
  // When it was to start (fire time plus jitter): lateness counts from it.
  const scheduledAt = claim.scheduledAt ?? claim.occ.fireTime;
  const scheduledDate = scheduledAt === claim.occ.fireTime ? base.fireTime : new Date(scheduledAt);
  const historyPut = (entry: HistoryEntry): WriteOp => ({
    op: 'put',
    key: keys.history(claim.occ, entry.attempt),
    value: encodeHistory(entry),
    ttlMs: deps.historyRetentionMs,
  });
  let attempt = claim.attempt;
  let source = claim.source;
  let retriesLeft = spec.retries;
  let outcome: 'not-started' | 'finished' | 'abandoned' = 'not-started';
  let final: HistoryEntry | undefined;
  /** The in-flight record as this run last wrote it: the finish deletes exactly that one. */
  let inflightValue: string | undefined;
  let announce = (_leaseLapsed: boolean) => {};
  // The current attempt's `oncely.run` span (tracing.ts), ended with the attempt's outcome.
  const tracing = deps.tracing;
  let span: Span | undefined;
  const endSpan = (status: RunStatus, error?: unknown) => span && tracing?.ended(span, status, error);
  try {
    for (;;) {
      // A page's first attempt started when the page's start was recorded (the record is what
      // other nodes judge overlap and recovery by); any other attempt, now.
      const startedAt =
        attempt === claim.attempt && claim.startedAt !== undefined
          ? claim.startedAt
          : storeTimeNow(claim, clock);
      const first = attempt === claim.attempt;
      // A page's runs have no in-flight record of their own (the page's record stands for them).
      const value = book.wantsInflight
        ? inflightText(claim, attempt, source, startedAt, node, spec.lockAtMostForMs)
        : undefined;
      const startOps = book.startOps(first, value);
      const recorded =
        startOps.length === 0 ||
        (await persistStart(
          deps,
          `start of ${claim.occ.job}`,
          startOps,
          value === undefined ? undefined : { key: keys.inflight(claim.occ), value },
          halt,
        ));
      if (!recorded) {
        // The first attempt never started: give the claim up. A retry that could not start is
        // an abandoned occurrence (its earlier attempts are on record): recovery decides.
        if (attempt !== claim.attempt) outcome = 'abandoned';
        else hooks.notStarted?.();
        return;
      }
      inflightValue = value;
      // A rate-limited retry, or a first start its start record's retries made late, asks the
      // window for a start of its own (fleet-limits.ts, rateStart).
      if (deps.rateStart && (!first || clock.monotonic() - claim.sentAt > LATE_START_MS)) {
        // A page's run that waits so (seconds, in line behind older work) is marked apart: the
        // page's mark showed it called with the page's first, and a later fire time of its
        // schedule was skipped naming it before it started (simulator, `lim,rl,mc,pages`, sim
        // faults, seed 252). Said in the turn the page launched it (a page's runs write no start
        // of their own: nothing is awaited before this), before any mark of the page goes out.
        if (first) book.callsLate?.(claim);
        const granted = await deps.rateStart(halt.signal, scheduledAt);
        // Stopped while waiting (halted, or the node stopping: 0 granted): its start is on
        // record, its handler never ran (recovery decides).
        if (halt.aborted || granted === 0) {
          outcome = 'abandoned';
          return;
        }
      }
      // Claimed ahead (due/claim-lead.ts): the handler starts at its start, not before.
      if (first && claim.notBefore !== undefined) {
        const early = claim.notBefore - clock.monotonic();
        if (early > 0) await startAt(clock, deps.storeNow, scheduledAt, claim.notBefore);
      }
      // The claim must still hold when the handler starts: a node frozen between its start record
      // and here (a page's runs start after the page's one start write) may wake after its lease
      // lapsed and another node recovered the occurrence. Not started then; the start record
      // stays, and recovery (there, or here later) decides — as for a lease lost mid-run. Late
      // in the lease, renewed first (run-book.ts, `fresh`).
      if (keeper.fresh !== undefined && !(await keeper.fresh())) {
        leaseLost = true;
        outcome = 'abandoned';
        return;
      }
      if (!keeper.held()) {
        leaseLost = true;
        outcome = 'abandoned';
        return;
      }
      // Built as base is and then assigned to, not `{ ...base, … }`: V8 gave each spread copy of
      // base (a literal grown by assignments) a hidden class of its own, ~0.3 KB per run in flight.
      const entry = runFields(claim, node, base.fireTime) as Omit<HistoryEntry, 'status'>;
      entry.scheduledAt = scheduledDate;
      entry.attempt = attempt;
      entry.source = source;
      entry.startedAt = new Date(startedAt);
      deps.started(claim.occ.job, source, startedAt - scheduledAt, () => ({
        ...base,
        attempt: entry.attempt,
        source: entry.source,
        startedAt: entry.startedAt,
        scheduledAt: scheduledDate,
      }));
      span = tracing?.run(claim.occ, { node, token: claim.lease.token, attempt, source }, claim.claimSpan);
      const active = span;
      // Only a job with a timeout pays for its controller and link (1,000 runs at once add up).
      const timeout = spec.timeoutMs === undefined ? undefined : new AbortController();
      const attemptLink = timeout === undefined ? undefined : linkSignals([halt.signal, timeout.signal]);
      if (attemptLink) links.push(attemptLink);
      // What ends this attempt: the link of halt and the timeout, or halt itself (whose
      // AbortSignal the handler's context makes only when the handler reads it).
      const signal: { readonly aborted: boolean; readonly reason: unknown } = attemptLink?.signal ?? halt;
      // Overlap 'replace': a newer fire time of the gate aborts ctx.signal (run/replace.ts), but
      // the attempt is not cut short: it ends when its handler does, holding the gate till then.
      const replace = spec.overlap === 'replace' ? deps.replaceable(claim.occ) : undefined;
      const ctxLink = replace && linkSignals([attemptLink?.signal ?? halt.signal, replace.signal]);
      if (ctxLink) links.push(ctxLink);
      const ctx = jobContext(claim, spec, attempt, node, ctxLink ?? attemptLink ?? halt);
      const t0 = clock.monotonic();
      let handlerDone: Promise<unknown> = Promise.resolve();
      let status: RunStatus;
      let error: unknown;
      let output: string | undefined;
      // Ends the timeout's sleep when the attempt ends first (only a job with a timeout has one).
      const timer = timeout === undefined ? undefined : new AbortController();
      let onAbort = () => {};
      try {
        handlerDone = Promise.resolve().then(() =>
          active && tracing ? tracing.within(active, () => deps.handler(ctx)) : deps.handler(ctx),
        );
        book.invoked?.(claim, startedAt);
        const stopped = new Promise<never>((_, reject) => {
          onAbort = () => reject(signal.reason);
          if (signal.aborted) onAbort();
          else if (attemptLink === undefined) haltAttempt = onAbort;
          else attemptLink.signal.addEventListener('abort', onAbort, { once: true });
        });
        // The signal may fire long after this attempt ended (stop() aborting other runs): that
        // late rejection must not surface as an unhandled rejection.
        stopped.catch(() => {});
        if (timeout !== undefined && timer !== undefined) {
          void clock.sleep(spec.timeoutMs!, timer.signal).then(() => {
            if (!timer.signal.aborted) {
              timeout.abort(
                new OncelyError(
                  'TIMEOUT',
                  `job ${JSON.stringify(claim.occ.job)} timed out after ${spec.timeoutMs} ms`,
                ),
              );
            }
          });
        }
        // A handler that ignores its signal is not waited for once the signal fired: the result
        // is recorded now and the handler's eventual settlement is ignored.
        handlerDone.catch(() => {});
        const value = await Promise.race([handlerDone, stopped]);
        if (typeof value === 'string') output = value.length > 4000 ? value.slice(-4000) : value;
        status = 'succeeded';
      } catch (err) {
        error = err;
        status = timeout?.signal.aborted && err === timeout.signal.reason ? 'timed-out' : 'failed';
        // Replaced: failed with the replacement as its error, whatever the handler threw.
        if (status === 'failed' && replace?.signal.aborted) error = replace.signal.reason;
      } finally {
        replace?.done();
        if (attemptLink === undefined) haltAttempt = undefined;
        else attemptLink.signal.removeEventListener('abort', onAbort);
        timer?.abort(INTERNAL_ABORT);
        attemptLink?.dispose();
      }
      const finishedAt = new Date(storeTimeNow(claim, clock));
      if (halt.aborted) {
        // The claim is gone or we are stopping: this attempt is abandoned; recovery decides the rest.
        // Stopping with the claim still held: give a handler that ignores its signal a little time
        // to end (the keep-alive goes on), so that another node does not recover the occurrence
        // while this one is still running it (a shell command dying after SIGTERM, say).
        if (!leaseLost) await handlerSettled(deps, handlerDone);
        // Its lease lost (the keep-alive found it gone: a node frozen past it, a store that
        // lapsed it): the handler may still be going, and another node may already have the gate
        // and the occurrence — the history says so (`leaseLapsed`), as a finish stored late does.
        final = {
          ...entry,
          status: 'abandoned',
          finishedAt,
          error: errorText(error ?? halt.reason),
          ...(leaseLost ? { leaseLapsed: true } : {}),
        };
        endSpan('abandoned', error ?? halt.reason);
        outcome = 'abandoned';
        return;
      }
      const durationMs = clock.monotonic() - t0;
      endSpan(status, error);
      if (status === 'succeeded') {
        // Completed by assignment, not `{ ...entry, … }`: a spread was a third of a run's own
        // CPU (the attempt's entry is not used again).
        const done = entry as HistoryEntry;
        done.status = status;
        done.finishedAt = finishedAt;
        if (output !== undefined) done.output = output;
        final = done;
        const at = { attempt, source };
        announce = (leaseLapsed) =>
          deps.succeeded(claim.occ.job, durationMs, () => ({
            ...base,
            ...at,
            durationMs,
            ...(leaseLapsed && { leaseLapsed }),
          }));
        outcome = 'finished';
        return;
      }
      const willRetry = retriesLeft > 0 && replace?.signal.aborted !== true;
      const failed: HistoryEntry = {
        ...entry,
        status,
        finishedAt,
        error: errorText(error),
        ...(willRetry && { willRetry: true }),
      };
      const event = {
        ...base,
        attempt,
        source,
        error,
        status: status as 'failed' | 'timed-out',
        willRetry,
        durationMs,
      };
      if (!willRetry) {
        final = failed;
        announce = (leaseLapsed) => emit('failed', { ...event, ...(leaseLapsed && { leaseLapsed }) });
        outcome = 'finished';
        return;
      }
      await persist(deps, 'history', () => writes.submit([historyPut(failed)]), halt);
      emit('failed', event);
      const n = spec.retries - retriesLeft;
      retriesLeft--;
      const delay = retryWait(spec.retryDelayMs, n, deps.random);
      await clock.sleep(delay, halt.signal);
      if (halt.aborted) {
        outcome = 'abandoned';
        return;
      }
      attempt++;
      source = 'retry';
    }
  } catch (err) {
    emit('error', { error: err, during: `run of ${claim.occ.job}` });
  } finally {
    hooks.handlerEnded?.();
    unwatchStop();
    for (const link of links) link.dispose();
    if (outcome === 'finished') {
      // Done: one batch, retried until stored (the keep-alive goes on meanwhile, so the claim
      // does not lapse while the store is briefly away); then no late node can take the
      // occurrence again (it stays claimed, and late nodes also consult the high-water mark).
      // The in-flight record is deleted only as this run wrote it: if the lease lapsed first, a
      // recovery may have put its own there, which must stay for as long as that run lives.
      const { ops, lapse } = book.finishOps(final ? historyPut(final) : undefined, inflightValue);
      // Its mark goes with it (after the lapse op: `lapse` still indexes the release).
      const unmark = await book.endMark?.(false);
      if (unmark) ops.push(unmark);
      const finishSpan = span && tracing?.finish(span, final?.status ?? 'succeeded');
      let results: boolean[] = [];
      const stored = await persist(
        deps,
        `finish of ${claim.occ.job}`,
        async () => {
          results = await writes.submit(ops, book.finishLingerMs);
        },
        deps.stopSignal,
      );
      // The store refused the claim's release (`lapse`): its lease had lapsed before the outcome
      // was stored (a stalled link, a long pause), so another node may have recovered it — the
      // documented at-least-once case. Said in the history entry and the event, so that nobody
      // (operator, history checker) reads the recovery as a run after a success.
      const leaseLapsed =
        stored && (lapse !== undefined ? results[lapse] === false : book.lapsed?.() === true);
      if (leaseLapsed) await recordLapse(deps, claim, final, historyPut);
      if (finishSpan) tracing?.finishEnded(finishSpan, stored);
      await keeper.stop();
      if (stored) announce(leaseLapsed);
      await book.ended?.(stored);
    } else {
      await keeper.stop();
      await book.endMark?.(true);
      // Abandoned (stop, lease lost) or never started: record it and free the occurrence at once
      // so that another node recovers it (its in-flight record stays) or, never started, the
      // misfire policy covers it. Releases of a lost lease are refused harmlessly. One try: the
      // leases expire on their own if the store is away.
      await writes
        .submit(book.abandonOps(final ? historyPut(final) : undefined))
        .catch((err) => emit('error', { error: err, during: `release of ${claim.occ.job}` }));
      await book.ended?.(false);
    }
  }
}
