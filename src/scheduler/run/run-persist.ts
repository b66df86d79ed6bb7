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
 * Writes a run's start batch (its in-flight record, and on a first attempt the claim's moves: the
 * due entry moved on, the high-water mark), retried while the store is away — but never written
 * again once it landed. A try whose answer was lost may have been applied (`apply` is atomic, so
 * the in-flight record holding this attempt's value says it was); written again, its due-entry
 * move — a delete and a put — put back the entry that another node had moved on since (a later
 * fire time skipped or run), a stale copy of the schedule's chain that, offered at every tick,
 * took the schedule's gate from the live entry's replays (simulator, four nodes, catch-up pages:
 * a catch-up stalled for 8 s; the same class as finish/settle.ts's retry).
 */
export async function persistStart(
  deps: RunDeps,
  what: string,
  ops: WriteOp[],
  inflight: { key: string; value: string } | undefined,
  halt: AbortSignal | LazyAbort,
): Promise<boolean> {
  let sent = false;
  return persist(
    deps,
    what,
    async () => {
      if (sent && inflight !== undefined && (await deps.store.get(inflight.key)) === inflight.value) return;
      sent = true;
      await deps.writes.submit(ops);
    },
    halt,
  );
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
