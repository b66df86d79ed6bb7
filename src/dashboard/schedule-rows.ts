/**
 * Pages of stored schedules for the dashboard's lists, read without parsing large `data`.
 *
 * Records written before the 64 KiB limit on stored schedules (schedule-input.ts), or straight
 * through the store, may hold megabytes of `data`: 60 records of 5 MB made one
 * `GET /api/schedules` answer 315 MB (RSS 1.8 GB) and the job page parse 300 MB to show 80
 * characters of each. A list row therefore carries `data` whole only when its JSON is at most
 * DATA_INLINE_MAX characters; a longer one is a preview (its first DATA_PREVIEW_LENGTH characters)
 * and its length, and only the record's other members are parsed (json-members.ts). So a list
 * request parses at most DATA_INLINE_MAX characters per member and answers a bounded amount per
 * row, whatever the store holds; the store still hands over each record whole (the bytes a page
 * holds in memory are its records'). One schedule's own view (`GET /api/schedule?id=`) is whole.
 */

import { validateScheduleId } from '../scheduler/control/schedule-input.js';
import { pausesOf } from '../scheduler/control/schedule-pause.js';
import { validateJobName } from '../scheduler/job-options.js';
import { keys, unesc } from '../scheduler/keys.js';
import type { StoredSchedule } from '../scheduler/types.js';
import type { Store } from '../store/types.js';
import { topLevelMembers } from './json-members.js';

/** Characters of a schedule's `data` JSON that a list gives whole; past it, a preview. */
export const DATA_INLINE_MAX = 4096;
/** Characters of a preview of `data`'s JSON (and of any other member over DATA_INLINE_MAX). */
export const DATA_PREVIEW_LENGTH = 200;

/** The start of a large `data`'s JSON text, in place of the value. */
export interface DataPreview {
  /** Its first DATA_PREVIEW_LENGTH characters (one less rather than half a surrogate pair). */
  text: string;
  /** Characters of the whole JSON text. */
  length: number;
}

/** A stored schedule as a list shows it: `data` left out (`dataPreview` instead) when large. */
export interface ScheduleRow {
  schedule: StoredSchedule;
  dataPreview?: DataPreview;
}

/** `text` cut to at most `max` characters, never inside a surrogate pair. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/**
 * A row from a parsed record: `v` (the upsert version) dropped, `data` whole or as a preview,
 * and any other string member over DATA_INLINE_MAX characters cut with `…` (only records from
 * before the size limits have one, and such a trigger never compiles: no fire time is lost).
 */
function rowOf(members: Iterable<[string, unknown]>): ScheduleRow {
  // Entries, then Object.fromEntries: a member named `__proto__` stays a plain member, as in the
  // spread `schedules.list` makes of JSON.parse's result.
  const kept: [string, unknown][] = [];
  let dataPreview: DataPreview | undefined;
  for (const [name, value] of members) {
    if (name === 'v') continue;
    if (name === 'data') {
      const text = JSON.stringify(value) ?? '';
      if (text.length > DATA_INLINE_MAX) dataPreview = previewOf(text, text.length);
      else kept.push([name, value]);
    } else if (typeof value === 'string' && value.length > DATA_INLINE_MAX) {
      kept.push([name, `${cutText(value, DATA_PREVIEW_LENGTH)}…`]);
    } else kept.push([name, value]);
  }
  const schedule = Object.fromEntries(kept) as unknown as StoredSchedule;
  return { schedule, ...(dataPreview && { dataPreview }) };
}

function previewOf(start: string, length: number): DataPreview {
  return { text: cutText(start, DATA_PREVIEW_LENGTH), length };
}

/**
 * One stored record (`sch|<id>`'s value) as a list row. A record of at most DATA_INLINE_MAX
 * characters is parsed whole; a longer one member by member, a `data` over DATA_INLINE_MAX never
 * (only its first characters are copied out). A record that is not JSON throws, as
 * `schedules.list` does; one the member scan cannot read is parsed whole.
 */
export function scheduleRow(record: string): ScheduleRow {
  const members = record.length > DATA_INLINE_MAX ? topLevelMembers(record) : undefined;
  if (members === undefined) return rowOf(Object.entries(JSON.parse(record) as Record<string, unknown>));
  const parsed: [string, unknown][] = [];
  let dataPreview: DataPreview | undefined;
  // A name given twice is one entry of `members`, holding its last value (as JSON.parse keeps),
  // so `data` is either previewed or parsed, never both.
  for (const [name, { start, end }] of members) {
    if (name === 'data' && end - start > DATA_INLINE_MAX)
      // One character more than the preview: cutText sees whether the last one halves a pair.
      dataPreview = previewOf(record.slice(start, start + DATA_PREVIEW_LENGTH + 1), end - start);
    else parsed.push([name, JSON.parse(record.slice(start, end))]);
  }
  const row = rowOf(parsed);
  return dataPreview ? { schedule: row.schedule, dataPreview } : row;
}

/**
 * One page of stored schedules, ascending by id, as `scheduler.schedules.list` gives it (the same
 * keys and checks: one scan, plus one getMany with `job`), but as rows. Read-only: an index entry
 * left behind by a schedule that moved to another job is skipped (`list` deletes it).
 */
export async function readScheduleRows(
  store: Store,
  options: { job?: string | undefined; after?: string | undefined; limit: number },
): Promise<ScheduleRow[]> {
  const { job, after, limit } = options;
  if (after !== undefined) validateScheduleId(after);
  if (job === undefined) {
    const records = await store.scan(keys.schedulePrefix, {
      limit,
      ...(after !== undefined && { after: keys.schedule(after) }),
    });
    return withPauses(
      store,
      records.map((r) => scheduleRow(r.value)),
    );
  }
  validateJobName(job);
  const prefix = keys.scheduleOfJobPrefix(job);
  const index = await store.scan(prefix, {
    limit,
    ...(after !== undefined && { after: keys.scheduleOfJob(job, after) }),
  });
  const values = await store.getMany(index.map((r) => keys.schedule(unesc(r.key.slice(prefix.length)))));
  const rows: ScheduleRow[] = [];
  for (const value of values) {
    const row = value === null || value === undefined ? undefined : scheduleRow(value);
    if (row?.schedule.job === job) rows.push(row);
  }
  return withPauses(store, rows);
}

/** The rows with the pauses of those paused (`schedules.pause`): one more getMany, as `schedules.list` makes. */
async function withPauses(store: Store, rows: ScheduleRow[]): Promise<ScheduleRow[]> {
  const pauses = await pausesOf(
    store,
    rows.map((r) => r.schedule.id),
  );
  if (pauses.size === 0) return rows;
  return rows.map((r) => {
    const pause = pauses.get(r.schedule.id);
    return pause ? { ...r, schedule: { ...r.schedule, pause } } : r;
  });
}
