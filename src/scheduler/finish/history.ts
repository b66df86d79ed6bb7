import type { OccurrenceId } from '../keys.js';
import type { HistoryEntry } from '../types.js';

/**
 * A history entry as stored: dates as epoch ms. The one encoding every writer uses. `scheduledAt`
 * is stored only when it differs from `fireTime` (jitter): entries without jitter stay as they
 * were, and {@link decodeHistory} gives back `fireTime` for one stored without it.
 */
export function encodeHistory(entry: HistoryEntry): string {
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

export function decodeHistory(value: string): HistoryEntry {
  const raw = JSON.parse(value) as Record<string, unknown>;
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
