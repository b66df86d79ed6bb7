import type { Span } from '@opentelemetry/api';
import { LazyAbort } from '../../core/signals.js';
import type { WriteOp } from '../../store/types.js';
import { encodeHistory, encodeOutcome } from '../finish/history.js';
import { keys } from '../keys.js';
import type { HistoryEntry } from '../types.js';
import { runFields } from './run-fields.js';
import type { Claim, RunDeps } from './run-records.js';

/**
 * One run of a page's batch (page-batch.ts): what is really its own. Its outcome is kept as numbers
 * and stored by {@link encodeOutcome} (encodeHistory's text less what the key holds); a
 * HistoryEntry with its Dates is built only for what needs one (an abandonment, a lapse's mark).
 */
export interface Item {
  readonly k: number;
  readonly claim: Claim;
  /** Its context's signal (each run its own: a handler's listeners stay its own). */
  readonly halt: LazyAbort;
  /** Store times (ms) of its start, its scheduled start and its end; Dates only where an entry or event is built. */
  startedAt: number;
  scheduledAt: number;
  finishedAt: number;
  status: 'succeeded' | 'failed';
  output?: string;
  /** (Failed) the handler's error, and its text as stored. */
  error?: unknown;
  errorText?: string;
  t0: number;
  span: Span | undefined;
  handlerDone?: Promise<unknown>;
  /** Its outcome has been taken (settled, or halted): later news is ignored. */
  decided: boolean;
  /** Its end (finish or abandon) is under way: it will end. */
  ending: boolean;
  handlerOver: boolean;
  /** (Finished) how long its handler took. */
  durationMs: number;
}

/** Run `k` of a batch, not started. */
export function newItem(claim: Claim, k: number): Item {
  return {
    k,
    claim,
    halt: new LazyAbort(),
    startedAt: 0,
    scheduledAt: 0,
    finishedAt: 0,
    status: 'succeeded',
    t0: 0,
    span: undefined,
    decided: false,
    ending: false,
    handlerOver: false,
    durationMs: 0,
  };
}

/** The history put of run `it`'s entry `entry`, or (none given) of its outcome. */
export function historyPut(
  it: Item,
  deps: Pick<RunDeps, 'node' | 'historyRetentionMs'>,
  entry?: HistoryEntry,
): WriteOp {
  const { claim } = it;
  return {
    op: 'put',
    key: keys.history(claim.occ, claim.attempt),
    value:
      entry !== undefined
        ? encodeHistory(entry)
        : encodeOutcome({
            job: claim.occ.job,
            scheduleId: claim.occ.scheduleId,
            fireTime: claim.occ.fireTime,
            scheduledAt: it.scheduledAt,
            shard: claim.occ.shard,
            node: deps.node,
            attempt: claim.attempt,
            token: claim.lease.token,
            source: claim.source,
            status: it.status,
            startedAt: it.startedAt,
            finishedAt: it.finishedAt,
            error: it.errorText,
            output: it.output,
          }),
    ttlMs: deps.historyRetentionMs,
  };
}

/** Run `it`'s history entry as a HistoryEntry (a lapse's mark, an abandonment), `status` given. */
export function entryOf(
  it: Item,
  node: string,
  status: HistoryEntry['status'],
  finishedAt: number,
): HistoryEntry {
  const { claim } = it;
  const entry = runFields(claim, node) as HistoryEntry;
  entry.scheduledAt = it.scheduledAt === claim.occ.fireTime ? entry.fireTime : new Date(it.scheduledAt);
  entry.attempt = claim.attempt;
  entry.source = claim.source;
  entry.status = status;
  entry.startedAt = new Date(it.startedAt);
  entry.finishedAt = new Date(finishedAt);
  if (it.errorText !== undefined) entry.error = it.errorText;
  if (it.output !== undefined) entry.output = it.output;
  return entry;
}
