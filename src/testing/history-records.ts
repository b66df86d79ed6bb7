/**
 * Turns what oncely reports — `scheduler.history()` entries, run events, misfire/overlap skips,
 * a trigger's fire times — into the checker's input (see history-check.ts). Pure.
 */
import { compileTrigger, nextFireTimes, type Trigger } from '../schedule/index.js';
import type { HistoryEntry, SchedulerEvents } from '../scheduler/types.js';
import type { ExpectedOccurrence, RunRecord, SkipRecord } from './history-check.js';

const opt = <K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } =>
  (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };

/**
 * A start record per history entry, plus a finish record for each that ended (on the store clock).
 *
 * @example
 * const records = recordsFromHistory(await scheduler.history({ job: 'report', limit: 1000 }));
 */
export function recordsFromHistory(entries: readonly HistoryEntry[]): RunRecord[] {
  const out: RunRecord[] = [];
  for (const e of entries) {
    const base = runFields(e);
    if (e.status === 'skipped') continue;
    out.push({ ...base, event: 'start', at: e.startedAt.getTime() });
    if (e.finishedAt && e.status !== 'running')
      out.push({
        ...base,
        event: 'finish',
        status: e.status,
        at: e.finishedAt.getTime(),
        ...(e.leaseLapsed && { leaseLapsed: true }),
      });
  }
  return out;
}

/** A start record from a `started` event (its `startedAt` is on the store clock). */
export function recordFromStarted(e: SchedulerEvents['started']): RunRecord {
  return { ...runFields(e), event: 'start', at: e.startedAt.getTime() };
}

/** The fields a history entry and a `started` event share, as a run record has them. */
function runFields(e: HistoryEntry | SchedulerEvents['started']): Omit<RunRecord, 'event' | 'at' | 'status'> {
  return {
    node: e.node,
    job: e.job,
    ...opt('scheduleId', e.scheduleId),
    fireTime: e.fireTime.getTime(),
    ...opt('shard', e.shard),
    attempt: e.attempt,
    token: e.token,
    source: e.source,
  };
}

/** The skip a `misfired` event with action `skipped`, or a `skipped` event (overlap, superseded), records. */
export function skipFromEvent(
  e: SchedulerEvents['misfired'] | SchedulerEvents['skipped'],
): SkipRecord | undefined {
  if ('action' in e) {
    if (e.action !== 'skipped') return undefined;
    return {
      job: e.job,
      ...opt('scheduleId', e.scheduleId),
      from: e.firstFireTime.getTime(),
      to: e.fireTime.getTime(),
      reason: 'misfire',
    };
  }
  return skipRecord(e);
}

/**
 * The skips in `scheduler.history()` entries (status `skipped`, with the reason and the run they
 * name): what the store holds even when the node that wrote one died before its event.
 *
 * @example
 * const entries = await scheduler.history({ job: 'report', limit: 1000 });
 * checkHistory({ records: recordsFromHistory(entries), skips: skipsFromHistory(entries), jobs, expected });
 */
export function skipsFromHistory(entries: readonly HistoryEntry[]): SkipRecord[] {
  return entries.filter((e) => e.status === 'skipped').map((e) => skipRecord(e));
}

/** A `paused` or `removed` skip of a whole span of fire times (one entry or event) as the checker's skip record. */
function spanSkip(e: {
  job: string;
  scheduleId?: string | undefined;
  reason: 'paused' | 'removed';
  span: { first: Date; last: Date };
}): SkipRecord {
  return {
    job: e.job,
    ...opt('scheduleId', e.scheduleId),
    from: e.span.first.getTime(),
    to: e.span.last.getTime(),
    reason: e.reason,
  };
}

/**
 * An overlap, superseded, excluded or removed skip of one fire time, or a `paused` or `removed` span; an entry
 * stored before reasons existed counts as overlap.
 */
function skipRecord(e: {
  job: string;
  scheduleId?: string | undefined;
  shard?: number | undefined;
  fireTime: Date;
  reason?: string | undefined;
  by?: { fireTime: Date; node?: string | undefined; token?: number | undefined } | undefined;
  span?: { first: Date; last: Date } | undefined;
}): SkipRecord {
  if ((e.reason === 'paused' || e.reason === 'removed') && e.span !== undefined)
    return spanSkip({ ...e, reason: e.reason, span: e.span });
  return {
    job: e.job,
    ...opt('scheduleId', e.scheduleId),
    ...opt('shard', e.shard),
    from: e.fireTime.getTime(),
    to: e.fireTime.getTime(),
    reason:
      e.reason === 'superseded' || e.reason === 'excluded' || e.reason === 'removed' ? e.reason : 'overlap',
    ...(e.by !== undefined && {
      by: { fireTime: e.by.fireTime.getTime(), ...opt('node', e.by.node), ...opt('token', e.by.token) },
    }),
  };
}

/**
 * The occurrences a trigger makes due in `[from, to]` (epoch ms, inclusive), one per shard when
 * `shards` is given.
 *
 * @example
 * expectedOccurrences('tick', { every: '1s' }, { from: t0, to: t1 });
 */
export function expectedOccurrences(
  job: string,
  trigger: Trigger,
  window: { from: number; to: number; shards?: number; scheduleId?: string },
): ExpectedOccurrence[] {
  const compiled = compileTrigger(trigger);
  const out: ExpectedOccurrence[] = [];
  let after = window.from - 1;
  for (;;) {
    const batch = nextFireTimes(compiled, after, 1000).filter((t) => t <= window.to);
    for (const fireTime of batch) {
      if (window.shards === undefined) out.push({ job, ...opt('scheduleId', window.scheduleId), fireTime });
      else
        for (let shard = 0; shard < window.shards; shard++)
          out.push({ job, ...opt('scheduleId', window.scheduleId), fireTime, shard });
    }
    if (batch.length < 1000) return out;
    after = batch.at(-1)!;
  }
}
