import { OncelyError } from '../../core/errors.js';
import { keys, type OccurrenceId, parseHistoryKey } from '../keys.js';
import type { HistoryEntry } from '../types.js';

/**
 * A history entry as stored: dates as epoch ms. The one encoding every writer uses. `scheduledAt`
 * is stored only when it differs from `fireTime` (jitter): entries without jitter stay as they
 * were, and {@link decodeHistory} gives back `fireTime` for one stored without it.
 *
 * Built by assignment in the entry's declared field order (one per run: a spread of the entry
 * with conditional spreads was most of the encoding's cost); an entry with a field this does not
 * know is encoded generically, so nothing it carries is dropped.
 */
export function encodeHistory(entry: HistoryEntry): string {
  const fireTime = entry.fireTime.getTime();
  const out: Record<string, unknown> = { job: entry.job };
  if (entry.scheduleId !== undefined) out['scheduleId'] = entry.scheduleId;
  out['fireTime'] = fireTime;
  // A scheduledAt that is the fire time is known but not stored.
  const at = entry.scheduledAt?.getTime();
  if (at !== undefined && at !== fireTime) out['scheduledAt'] = at;
  if (entry.shard !== undefined) out['shard'] = entry.shard;
  out['node'] = entry.node;
  out['attempt'] = entry.attempt;
  out['token'] = entry.token;
  out['source'] = entry.source;
  out['status'] = entry.status;
  out['startedAt'] = entry.startedAt.getTime();
  if (entry.finishedAt !== undefined) out['finishedAt'] = entry.finishedAt.getTime();
  if (entry.error !== undefined) out['error'] = entry.error;
  if (entry.output !== undefined) out['output'] = entry.output;
  if (entry.leaseLapsed !== undefined) out['leaseLapsed'] = entry.leaseLapsed;
  if (entry.willRetry !== undefined) out['willRetry'] = entry.willRetry;
  if (entry.reason !== undefined) out['reason'] = entry.reason;
  if (entry.by !== undefined) out['by'] = { ...entry.by, fireTime: entry.by.fireTime.getTime() };
  if (entry.span !== undefined)
    out['span'] = { ...entry.span, first: entry.span.first.getTime(), last: entry.span.last.getTime() };
  const known = countDefined(out) + (at === fireTime ? 1 : 0);
  return known === countDefined(entry) ? JSON.stringify(out) : encodeGeneric(entry);
}

/** A run's outcome as numbers (run/page-batch.ts): what {@link encodeOutcome} stores. */
export interface Outcome {
  job: string;
  scheduleId: string | undefined;
  fireTime: number;
  scheduledAt: number;
  shard: number | undefined;
  node: string;
  attempt: number;
  token: number;
  source: HistoryEntry['source'];
  status: HistoryEntry['status'];
  startedAt: number;
  finishedAt: number;
  error: string | undefined;
  output: string | undefined;
}

/**
 * A finished run's entry, built from its numbers, for the key `keys.history(its occurrence, its
 * attempt)` and only for that key: {@link encodeHistory}'s text less what the key holds — job,
 * schedule id, fire time, shard, attempt — which {@link decodeHistory} reads back from the key.
 * Written for every run of a page (a fan-out ends them by the thousand), those fields were ~90 of
 * the ~250 bytes each entry sent, quoted, through an array parameter, and a third of the row.
 * An empty schedule id (which its key could not tell from none) stays in the value.
 */
export function encodeOutcome(o: Outcome): string {
  const out: Record<string, unknown> = {};
  if (o.scheduleId === '') out['scheduleId'] = o.scheduleId;
  if (o.scheduledAt !== o.fireTime) out['scheduledAt'] = o.scheduledAt;
  out['node'] = o.node;
  out['token'] = o.token;
  out['source'] = o.source;
  out['status'] = o.status;
  out['startedAt'] = o.startedAt;
  out['finishedAt'] = o.finishedAt;
  if (o.error !== undefined) out['error'] = o.error;
  if (o.output !== undefined) out['output'] = o.output;
  return JSON.stringify(out);
}

/** The fields of `entry` that are not `undefined` (JSON.stringify leaves those out). */
function countDefined(entry: object): number {
  let n = 0;
  for (const k in entry) if ((entry as Record<string, unknown>)[k] !== undefined) n++;
  return n;
}

/** {@link encodeHistory} of an entry with a field it does not know: every field, dates as ms. */
function encodeGeneric(entry: HistoryEntry): string {
  const scheduledAt = entry.scheduledAt?.getTime();
  return JSON.stringify({
    ...entry,
    fireTime: entry.fireTime.getTime(),
    scheduledAt: scheduledAt === entry.fireTime.getTime() ? undefined : scheduledAt,
    startedAt: entry.startedAt.getTime(),
    finishedAt: entry.finishedAt?.getTime(),
    ...(entry.by !== undefined && { by: { ...entry.by, fireTime: entry.by.fireTime.getTime() } }),
    ...(entry.span !== undefined && {
      span: { ...entry.span, first: entry.span.first.getTime(), last: entry.span.last.getTime() },
    }),
  });
}

/**
 * A stored history entry read back, with `key` the key it was stored at: a field the value leaves
 * out because the key holds it ({@link encodeOutcome}) is taken from the key; one the value has
 * (every other writer, and every entry written before) is the value's.
 */
export function decodeHistory(value: string, key: string): HistoryEntry {
  const raw = JSON.parse(value) as Record<string, unknown>;
  if (raw['job'] === undefined || raw['fireTime'] === undefined || raw['attempt'] === undefined) {
    const at = parseHistoryKey(key);
    if (at === undefined)
      throw new OncelyError('INTERNAL', `history entry at ${JSON.stringify(key)} names no occurrence`);
    raw['job'] ??= at.occ.job;
    raw['fireTime'] ??= at.occ.fireTime;
    raw['attempt'] ??= at.attempt;
    if (at.occ.scheduleId !== undefined) raw['scheduleId'] ??= at.occ.scheduleId;
    if (at.occ.shard !== undefined) raw['shard'] ??= at.occ.shard;
  }
  return {
    ...(raw as unknown as HistoryEntry),
    fireTime: new Date(raw['fireTime'] as number),
    scheduledAt: new Date(
      (typeof raw['scheduledAt'] === 'number' ? raw['scheduledAt'] : raw['fireTime']) as number,
    ),
    startedAt: new Date(raw['startedAt'] as number),
    ...(typeof raw['finishedAt'] === 'number' && { finishedAt: new Date(raw['finishedAt']) }),
    ...(isCause(raw['by']) && { by: { ...raw['by'], fireTime: new Date(raw['by'].fireTime) } }),
    ...(isSpan(raw['span']) && {
      span: { ...raw['span'], first: new Date(raw['span'].first), last: new Date(raw['span'].last) },
    }),
  };
}

function isSpan(v: unknown): v is { first: number; last: number; count?: number } {
  return typeof v === 'object' && v !== null && typeof (v as { first?: unknown }).first === 'number';
}

function isCause(v: unknown): v is { fireTime: number; node?: string; token?: number } {
  return typeof v === 'object' && v !== null && typeof (v as { fireTime?: unknown }).fireTime === 'number';
}

/**
 * The occurrence part of a history entry or event (optional fields only when present), with
 * `fireTime` as the Date given (one Date can serve a run's entries) or a new one.
 */
export function occFields(
  o: OccurrenceId,
  fireTime?: Date,
): Pick<HistoryEntry, 'job' | 'fireTime' | 'scheduleId' | 'shard'> {
  // Assigned, not spread: built for every run and event.
  const out: Pick<HistoryEntry, 'job' | 'fireTime' | 'scheduleId' | 'shard'> = {
    job: o.job,
    fireTime: fireTime ?? new Date(o.fireTime),
  };
  if (o.scheduleId !== undefined) out.scheduleId = o.scheduleId;
  if (o.shard !== undefined) out.shard = o.shard;
  return out;
}

/** The history keys of one run of `occ`: its attempt `first` and the `retries` that may follow it, oldest first. */
export function runHistoryKeys(occ: OccurrenceId, first: number, retries: number): string[] {
  return Array.from({ length: retries + 1 }, (_, k) => keys.history(occ, first + k));
}

/**
 * Of the entries read by {@link runHistoryKeys} for run after run (each with the same `retries`;
 * `wanted` the keys asked for, `read` what came back), each run's latest on record, decoded
 * (none: null): a failed attempt retried is not its end, a retry is.
 */
export function latestPerRun(
  wanted: readonly string[],
  read: readonly (string | null | undefined)[],
  retries: number,
): (HistoryEntry | null)[] {
  const n = retries + 1;
  const out: (HistoryEntry | null)[] = [];
  for (let at = 0; at + n <= read.length; at += n) {
    let latest: HistoryEntry | null = null;
    for (let k = at + n - 1; k >= at && latest === null; k--) {
      const value = read[k];
      if (value !== null && value !== undefined) latest = decodeHistory(value, wanted[k]!);
    }
    out.push(latest);
  }
  return out;
}
