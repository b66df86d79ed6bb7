/**
 * How a stored schedule is shown, in one place for `oncely schedules` and the dashboard: its
 * trigger, its next fire time (computed, not stored: `fireTimes` after the store's now) and its
 * JSON shape (a contract of `/api/schedules` and `oncely schedules --json`).
 */
import type { Duration } from '../core/duration.js';
import { boundedBy } from '../schedule/bounds.js';
import { fireTimes } from '../schedule/fire-times.js';
import { compileShared } from '../schedule/shared-triggers.js';
import type { CompiledTrigger, Trigger } from '../schedule/trigger.js';
import type { StoredSchedule } from '../scheduler/types.js';
import { cutText, type ScheduleRow } from './schedule-rows.js';

/** A stored schedule's trigger without its time zone (that is a field of its own); `at` as ISO-8601. */
export type ScheduleTriggerJson = { cron: string } | { every: Duration } | { at: string };

export interface ScheduleJson {
  id: string;
  job: string;
  trigger: ScheduleTriggerJson | null;
  /** Cron schedules with an explicit zone only (default UTC). */
  timezone?: string;
  /** The next fire time after the store's now; `null` for an `at` in the past. */
  nextFireTime: string | null;
  /** The schedule's data; `null` when it has none, or when it is given as `dataPreview`. */
  data: unknown;
  /**
   * Lists only (schedule-rows.ts): set when data's JSON is over DATA_INLINE_MAX (4,096)
   * characters; `data` is then `null`, `dataPreview` its first 200 characters and `dataLength`
   * the characters of the whole (`GET /api/schedule?id=` gives it whole).
   */
  dataTruncated?: true;
  dataPreview?: string;
  dataLength?: number;
  /** While paused (`schedules.pause`): since when (ISO-8601), by whom, and the note. */
  pause?: { since: string; actor?: string; note?: string };
  /** With `maxRuns` (docs/bounds.md): how many runs may still start. */
  remainingRuns?: number;
  /** With `maxRuns` or `endAt`: nothing of it will run any more. */
  ended?: boolean;
}

/** A schedule (whole, or a list row with a preview of large data) with its next fire time. */
export interface ScheduleView extends ScheduleRow {
  next: Date | undefined;
}

function epochOf(at: Date | string | number): number {
  return at instanceof Date ? at.getTime() : typeof at === 'string' ? Date.parse(at) : at;
}

/** The schedule's trigger as `fireTimes` takes it, or `undefined` for a record without one. */
export function triggerOf(s: StoredSchedule): Trigger | undefined {
  if (s.cron !== undefined)
    return { cron: s.cron, ...(s.timezone !== undefined && { timezone: s.timezone }) };
  if (s.every !== undefined) return { every: s.every };
  if (s.at !== undefined) return { at: s.at };
  return undefined;
}

/**
 * A page of schedules with their next fire times after `now` (store time, epoch ms). Each distinct
 * trigger is compiled once per process (the scheduler's shared cache, shared-triggers.ts: before,
 * every request compiled every cron of its page again — ten 500 KB crons stalled the event loop
 * 3.5 s per request), and a trigger that fails to compile once per page. A record whose trigger
 * no longer compiles (written by another version) gets no next fire time instead of failing the page.
 */
export function scheduleViews(rows: readonly ScheduleRow[], now: number): ScheduleView[] {
  const compiled = new Map<string, CompiledTrigger | null>();
  return rows.map((row) => {
    const { schedule } = row;
    const trigger = triggerOf(schedule);
    if (!trigger) return { ...row, next: undefined };
    const signature = JSON.stringify(trigger);
    let c = compiled.get(signature);
    if (c === undefined) {
      try {
        c = compileShared(trigger, `schedule ${JSON.stringify(schedule.id)}`);
      } catch {
        c = null;
      }
      compiled.set(signature, c);
    }
    return { ...row, next: c ? nextOf(c, schedule, now) : undefined };
  });
}

/** The next fire time after `now` within the schedule's startAt/endAt (schedule/bounds.ts), if any. */
function nextOf(trigger: CompiledTrigger, schedule: StoredSchedule, now: number): Date | undefined {
  // Ended (no runs left, as get/list say): nothing comes.
  if (schedule.ended === true) return undefined;
  try {
    return fireTimes(boundedBy(trigger, schedule, `schedule ${JSON.stringify(schedule.id)}`), {
      after: now,
      count: 1,
    })[0];
  } catch {
    return undefined;
  }
}

export function scheduleJson({ schedule: s, next, dataPreview }: ScheduleView): ScheduleJson {
  let trigger: ScheduleTriggerJson | null = null;
  if (s.cron !== undefined) trigger = { cron: s.cron };
  else if (s.every !== undefined) trigger = { every: s.every };
  else if (s.at !== undefined) {
    const ms = epochOf(s.at);
    trigger = { at: Number.isFinite(ms) ? new Date(ms).toISOString() : String(s.at) };
  }
  return {
    id: s.id,
    job: s.job,
    trigger,
    ...(s.timezone !== undefined && { timezone: s.timezone }),
    nextFireTime: next ? next.toISOString() : null,
    data: s.data ?? null,
    ...(dataPreview && {
      dataTruncated: true,
      dataPreview: dataPreview.text,
      dataLength: dataPreview.length,
    }),
    ...(s.pause !== undefined && { pause: { ...s.pause, since: s.pause.since.toISOString() } }),
    ...(s.remainingRuns !== undefined && { remainingRuns: s.remainingRuns }),
    ...(s.ended !== undefined && { ended: s.ended }),
  };
}

/** `paused since <time> by <actor>: <note>` for a paused schedule (the note cut at `max` characters). */
export function describeSchedulePause(s: StoredSchedule, max = 200): string | undefined {
  const p = s.pause;
  if (p === undefined) return undefined;
  const note = p.note === undefined ? '' : `: ${abbreviateText(p.note.replace(/\s+/g, ' '), max)}`;
  return `paused since ${p.since.toISOString()}${p.actor !== undefined ? ` by ${p.actor}` : ''}${note}`;
}

/** `cron 0 9 * * *`, `every 1h`, `at 2030-01-01T00:00:00.000Z` (the zone is shown apart). */
export function describeScheduleTrigger(s: StoredSchedule): string {
  const t = scheduleJson({ schedule: s, next: undefined }).trigger;
  if (!t) return '-';
  if ('cron' in t) return `cron ${t.cron}`;
  if ('every' in t) return `every ${typeof t.every === 'number' ? `${t.every}ms` : t.every}`;
  return `at ${t.at}`;
}

/** The schedule's data as one line of at most `max` characters (`-` for none). */
export function abbreviateData(data: unknown, max: number): string {
  if (data === undefined || data === null) return '-';
  return abbreviateText(JSON.stringify(data) ?? String(data), max);
}

/** A row's data as one line of at most `max` characters, from its preview when it has one. */
export function abbreviateRowData(row: ScheduleRow, max: number): string {
  return row.dataPreview
    ? `${cutText(row.dataPreview.text, max - 1)}…`
    : abbreviateData(row.schedule.data, max);
}

function abbreviateText(text: string, max: number): string {
  return text.length > max ? `${cutText(text, max - 1)}…` : text;
}
