import type { Clock } from '../core/clock.js';
import { OncelyError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { KeepAlive } from '../lock/keep-alive.js';
import { LeaseLock } from '../lock/lease-lock.js';
import type { Lease, Store } from '../store/types.js';
import { encodeHistory, occFields } from './history.js';
import type { JobSpec } from './job-options.js';
import { keys, type OccurrenceId } from './keys.js';
import type {
  HistoryEntry,
  JobContext,
  JobHandler,
  RunEvent,
  RunSource,
  RunStatus,
  SchedulerEvents,
} from './types.js';

/** A claimed occurrence, ready to run: the store granted `lease` (and `gate` for fleet-wide overlap control). */
export interface Claim {
  occ: OccurrenceId;
  lease: Lease;
  gate: Lease | undefined;
  /** Monotonic time just before the acquire that granted the leases was sent. */
  sentAt: number;
  attempt: number;
  source: RunSource;
  data: unknown;
}

/** What an in-flight record holds: enough for another node to recover the occurrence. */
export interface InflightRecord {
  job: string;
  scheduleId?: string;
  fireTime: number;
  shard?: number;
  attempt: number;
  token: number;
  node: string;
  source: RunSource;
  data?: unknown;
}

export interface RunDeps {
  store: Store;
  node: string;
  clock: Clock;
  logger: Logger;
  spec: JobSpec;
  handler: JobHandler;
  emit: <K extends keyof SchedulerEvents>(event: K, payload: SchedulerEvents[K]) => void;
  historyRetentionMs: number;
  /** How long a finished occurrence stays claimed ("done") after its fire time. */
  doneHoldMs: number;
  /** Aborted when stop() gives up waiting: the run is abandoned and left for recovery. */
  stopSignal: AbortSignal;
}

function lockFor(deps: RunDeps, lease: Lease, sentAt: number): LeaseLock {
  const { spec, node, store, clock } = deps;
  return new LeaseLock(
    store,
    {
      name: lease.key,
      key: lease.key,
      owner: node,
      atMostMs: spec.lockAtMostForMs,
      atLeastMs: spec.lockAtLeastForMs,
    },
    lease,
    sentAt,
    clock,
  );
}

/** Store-time estimate: the lease's grant time plus local monotonic time elapsed since its request. */
function storeTimeNow(claim: Claim, clock: Clock): number {
  return claim.lease.acquiredAt + Math.max(0, clock.monotonic() - claim.sentAt);
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.length > 4000 ? `${text.slice(0, 4000)}…` : text;
}

/**
 * Runs one claimed occurrence to its end: keeps its leases alive, calls the handler with retries
 * and a timeout, writes one history record per attempt, and finally marks the occurrence done.
 *
 * Ordering (each step survives a crash before the next): inflight record → history "running" →
 * handler → history final → inflight deleted → occurrence released with a long hold ("done").
 * A crash before "history final" leaves an inflight record whose lease expires: another node
 * recovers it with attempt + 1 and a higher token. A crash after it is recognised by recovery
 * from the final history record and only cleaned up, never re-run.
 */
export async function executeRun(deps: RunDeps, claim: Claim): Promise<void> {
  const { store, spec, node, clock, logger, emit } = deps;
  const occLock = lockFor(deps, claim.lease, claim.sentAt);
  const gateLock = claim.gate ? lockFor(deps, claim.gate, claim.sentAt) : undefined;
  const keepers = [occLock, ...(gateLock ? [gateLock] : [])].map(
    (lock) => new KeepAlive(lock, { leaseMs: spec.lockAtMostForMs, renew: true, clock, logger }),
  );
  const lost = AbortSignal.any(keepers.map((k) => k.signal));
  const base: Omit<RunEvent, 'attempt' | 'source'> = {
    ...occFields(claim.occ),
    token: claim.lease.token,
    node,
  };
  const inflightKey = keys.inflight(claim.occ);
  let attempt = claim.attempt;
  let source = claim.source;
  let retriesLeft = spec.retries;
  let finished = false;
  const writeHistory = async (entry: HistoryEntry) => {
    await store
      .put(keys.history(claim.occ, entry.attempt), encodeHistory(entry), { ttlMs: deps.historyRetentionMs })
      .catch((err) => {
        emit('error', { error: err, during: 'history' });
      });
  };
  try {
    for (;;) {
      const inflight: InflightRecord = {
        job: claim.occ.job,
        fireTime: claim.occ.fireTime,
        attempt,
        token: claim.lease.token,
        node,
        source,
        ...(claim.occ.scheduleId !== undefined && { scheduleId: claim.occ.scheduleId }),
        ...(claim.occ.shard !== undefined && { shard: claim.occ.shard }),
        ...(claim.data !== undefined && { data: claim.data }),
      };
      const startedAt = new Date(storeTimeNow(claim, clock));
      const entry = { ...base, attempt, source, startedAt } satisfies Omit<HistoryEntry, 'status'>;
      // Both before the handler (a crash from here on is recovered from the inflight record), in
      // one round trip's time.
      await Promise.all([
        store.put(inflightKey, JSON.stringify(inflight)),
        writeHistory({ ...entry, status: 'running' }),
      ]);
      emit('started', { ...base, attempt, source, startedAt });
      const timeout = new AbortController();
      const signal = AbortSignal.any([lost, deps.stopSignal, timeout.signal]);
      const ctx: JobContext = {
        job: claim.occ.job,
        fireTime: new Date(claim.occ.fireTime),
        attempt,
        node,
        token: claim.lease.token,
        signal,
        ...(claim.occ.scheduleId !== undefined && { scheduleId: claim.occ.scheduleId }),
        ...(claim.data !== undefined && { data: claim.data }),
        ...(claim.occ.shard !== undefined &&
          spec.shards && {
            shard: {
              index: claim.occ.shard,
              count: spec.shards.count,
              ...(spec.shards.params[claim.occ.shard] !== undefined && {
                param: spec.shards.params[claim.occ.shard]!,
              }),
            },
          }),
      };
      const t0 = clock.monotonic();
      let status: RunStatus;
      let error: unknown;
      let output: string | undefined;
      const timer = new AbortController();
      try {
        const handlerDone = Promise.resolve().then(() => deps.handler(ctx));
        let onAbort = () => {};
        const stopped = new Promise<never>((_, reject) => {
          onAbort = () => reject(signal.reason);
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        });
        // The signal may fire long after this attempt ended (stop() aborting other runs): that
        // late rejection must not surface as an unhandled rejection.
        stopped.catch(() => {});
        timer.signal.addEventListener('abort', () => signal.removeEventListener('abort', onAbort), {
          once: true,
        });
        if (spec.timeoutMs !== undefined) {
          void clock.sleep(spec.timeoutMs, timer.signal).then(() => {
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
        status = timeout.signal.aborted && err === timeout.signal.reason ? 'timed-out' : 'failed';
      } finally {
        timer.abort();
      }
      const finishedAt = new Date(storeTimeNow(claim, clock));
      if (lost.aborted || deps.stopSignal.aborted) {
        // The claim is gone or we are stopping: this attempt is abandoned; recovery decides the rest.
        await writeHistory({
          ...entry,
          status: 'abandoned',
          finishedAt,
          error: errorText(error ?? lost.reason),
        });
        return;
      }
      if (status === 'succeeded') {
        await writeHistory({ ...entry, status, finishedAt, ...(output !== undefined && { output }) });
        emit('succeeded', { ...base, attempt, source, durationMs: clock.monotonic() - t0 });
        finished = true;
        return;
      }
      const willRetry = retriesLeft > 0;
      await writeHistory({ ...entry, status, finishedAt, error: errorText(error) });
      emit('failed', {
        ...base,
        attempt,
        source,
        error,
        status: status as 'failed' | 'timed-out',
        willRetry,
      });
      if (!willRetry) {
        finished = true;
        return;
      }
      const n = spec.retries - retriesLeft;
      retriesLeft--;
      const delay = spec.retryDelayMs * 2 ** n * (0.5 + Math.random() / 2);
      await clock.sleep(delay, AbortSignal.any([lost, deps.stopSignal]));
      if (lost.aborted || deps.stopSignal.aborted) return;
      attempt++;
      source = 'retry';
    }
  } catch (err) {
    emit('error', { error: err, during: `run of ${claim.occ.job}` });
  } finally {
    await Promise.all(keepers.map((k) => k.stop()));
    if (finished && !lost.aborted) {
      // Done: forget the inflight record, then keep the occurrence claimed long enough that no
      // late node can take it again (late nodes also consult the high-water mark).
      await store.delete(inflightKey).catch((err) => emit('error', { error: err, during: 'finish' }));
      const holdUntil = Math.max(
        claim.occ.fireTime + deps.doneHoldMs,
        claim.lease.acquiredAt + spec.lockAtLeastForMs,
      );
      await store.release(claim.lease.key, claim.lease.token, holdUntil).catch(() => {});
    } else if (!lost.aborted) {
      // Abandoned on stop: free the occurrence at once so another node recovers it.
      await store.release(claim.lease.key, claim.lease.token).catch(() => {});
    }
    // The gate honours lockAtLeastFor (LeaseLock.release holds it until acquiredAt + lockAtLeastFor).
    if (gateLock && !gateLock.released) await gateLock.release().catch(() => {});
  }
}
