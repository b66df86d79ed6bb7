/** How a run's records reach the store: retried through outages, and a finish that came after its lease lapsed marked as such. */
import { type LazyAbort, linkSignals } from '../../core/signals.js';
import type { WriteOp } from '../../store/types.js';
import type { HistoryEntry } from '../types.js';
import type { Claim, RunDeps } from './run-records.js';

/**
 * Retries `write` with back-off (100 ms doubling to 2 s) until it succeeds or `halt` aborts.
 * Returns whether it succeeded. Reports the first failure and every tenth after it. A run's
 * LazyAbort is asked for its AbortSignal only when a write failed.
 */
export async function persist(
  deps: RunDeps,
  what: string,
  write: () => Promise<unknown>,
  halt: AbortSignal | LazyAbort,
  /** Failures already reported by the caller (its own first try). */
  failed = 0,
): Promise<boolean> {
  for (let failures = failed; ; failures++) {
    if (halt.aborted) return false;
    try {
      await write();
      return true;
    } catch (err) {
      if (failures % 10 === 0) deps.emit('error', { error: err, during: what });
      const wake = linkSignals([halt instanceof AbortSignal ? halt : halt.signal, deps.storeBack()]);
      await deps.clock.sleep(Math.min(2_000, 100 * 2 ** Math.min(failures, 5)), wake.signal);
      wake.dispose();
    }
  }
}

/**
 * The outcome was stored after the run's lease had lapsed (the store refused the release): says
 * so in the history entry (`leaseLapsed`) and the log. The entry was put in the finishing batch as
 * a plain outcome; it is put again with the mark, over whatever a recovery wrote for this attempt
 * meanwhile (`abandoned`: the attempt did end this way).
 */
export async function recordLapse(
  deps: RunDeps,
  claim: Claim,
  final: HistoryEntry | undefined,
  historyPut: (entry: HistoryEntry) => WriteOp,
): Promise<void> {
  const { job, fireTime } = claim.occ;
  deps.logger.warn(
    `oncely: the run of ${JSON.stringify(job)} at ${new Date(fireTime).toISOString()} (token ${claim.lease.token}) ` +
      'was recorded after its lease had lapsed; another node may have recovered it (at-least-once)',
  );
  if (!final) return;
  const marked = { ...final, leaseLapsed: true };
  await persist(deps, `history of ${job}`, () => deps.writes.submit([historyPut(marked)]), deps.stopSignal);
}
