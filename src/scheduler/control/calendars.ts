import { invalidArgument } from '../../core/errors.js';
import { checkOptionNames } from '../../core/options.js';
import { type CompiledExclude, unknownCalendars, validateCalendarId } from '../../schedule/exclude.js';
import { validateTimezone } from '../../schedule/trigger.js';
import type { Store, WriteOp } from '../../store/types.js';
import { MAX_BATCH } from '../../store/validate.js';
import { keys } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { actorOf, auditOps } from './audit.js';
import type { CalendarRecord } from './calendar-cache.js';

/**
 * A calendar: dates that exclusions (`exclude: [{ calendar: id }]`, docs/calendars.md) skip. One
 * calendar serves any number of jobs and stored schedules.
 *
 * @example
 * await scheduler.calendars.upsert({ id: 'holidays-de', dates: ['2026-12-25', '2026-12-26'], timezone: 'Europe/Berlin' });
 */
export interface Calendar {
  /** Its id: 1-200 printable characters, unique per store. */
  id: string;
  /** Its dates, `YYYY-MM-DD` (at most 10,000); stored sorted, each once. */
  dates: readonly string[];
  /**
   * The IANA zone a fire time's date is read in (default: the excluding trigger's cron time zone,
   * else UTC).
   */
  timezone?: string;
  /** (Read back) when it was last upserted, on the store's clock. */
  updatedAt?: Date;
}

/** Options of `calendars.upsert` and `calendars.remove`. */
export interface CalendarChangeOptions {
  /** Who makes the change, for the audit trail: 1-255 characters (default: the scheduler's actor). */
  actor?: string;
}

/** `scheduler.calendars`: shared calendars of dates that exclusions skip (docs/calendars.md). */
export interface Calendars {
  /**
   * Creates or replaces a calendar (one write, with its audit entry `calendars.upsert`); every
   * node uses the new dates from its next poll on. `INVALID_ARGUMENT` for a bad id, date or zone,
   * more than 10,000 dates or an unknown field.
   *
   * @example
   * await scheduler.calendars.upsert({ id: 'holidays-de', dates: ['2026-12-25'], timezone: 'Europe/Berlin' }, { actor: 'ops' });
   */
  upsert: (calendar: Calendar, options?: CalendarChangeOptions) => Promise<void>;
  /** One lookup; `undefined` when there is no such calendar. */
  get: (id: string) => Promise<Calendar | undefined>;
  /**
   * Deletes a calendar (audit entry `calendars.remove`); `false` if there was none. Allowed while
   * exclusions name it: from the next poll they exclude nothing by it (docs/calendars.md).
   */
  remove: (id: string, options?: CalendarChangeOptions) => Promise<boolean>;
  /** One page of calendars ascending by id, after the `after` cursor; `limit` 1-100 (default 100). */
  list: (options?: { after?: string; limit?: number }) => Promise<Calendar[]>;
}

/** Dates per calendar at most (27 years of every day). */
export const MAX_CALENDAR_DATES = 10_000;
const LIST_MAX = 100;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** Dates listed as added or removed in a calendar's audit entry at most. */
const AUDIT_DATES = 100;

/** Throws `INVALID_ARGUMENT` unless `date` is a real calendar date written `YYYY-MM-DD`. */
function validDate(date: unknown, what: string): string {
  const m = typeof date === 'string' ? DATE.exec(date) : null;
  const [y, mo, d] = m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [0, 0, 0];
  const t = new Date(Date.UTC(y, mo - 1, d));
  if (!m || t.getUTCFullYear() !== y || t.getUTCMonth() !== mo - 1 || t.getUTCDate() !== d)
    throw invalidArgument(
      `${what} must be a date written YYYY-MM-DD, e.g. '2026-12-25'; got ${JSON.stringify(date)}`,
    );
  return date as string;
}

/** Validates a calendar (see {@link Calendars.upsert}); its dates sorted, each once. */
export function validateCalendar(input: unknown): { id: string; dates: string[]; timezone?: string } {
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    throw invalidArgument('calendars.upsert: give a calendar { id, dates: [YYYY-MM-DD, …], timezone? }');
  checkOptionNames('calendars.upsert: calendar', input, ['id', 'dates', 'timezone', 'updatedAt']);
  const c = input as Record<string, unknown>;
  const id = validateCalendarId(c.id, 'calendars.upsert: id');
  const where = `calendars.upsert: calendar ${JSON.stringify(id)}`;
  if (!Array.isArray(c.dates) || c.dates.length > MAX_CALENDAR_DATES)
    throw invalidArgument(`${where}: dates must be a list of at most ${MAX_CALENDAR_DATES} dates YYYY-MM-DD`);
  const dates = [...new Set(c.dates.map((d, i) => validDate(d, `${where}: dates[${i}]`)))].sort();
  const timezone =
    c.timezone === undefined ? undefined : validateTimezone(c.timezone as string, `${where}: timezone`);
  return { id, dates, ...(timezone !== undefined && { timezone }) };
}

function publicView(record: CalendarRecord): Calendar {
  return {
    id: record.id,
    dates: record.dates,
    ...(record.timezone !== undefined && { timezone: record.timezone }),
    updatedAt: new Date(record.updatedAt),
  };
}

/** What an audit entry keeps of a calendar change: the zone, how many dates, and (up to 100) which came and went. */
function changeSnapshots(before: CalendarRecord | undefined, after: { dates: string[]; timezone?: string }) {
  const old = new Set(before?.dates ?? []);
  const now = new Set(after.dates);
  const added = after.dates.filter((d) => !old.has(d));
  const removed = (before?.dates ?? []).filter((d) => !now.has(d));
  return {
    ...(before && { before: { timezone: before.timezone ?? null, count: before.dates.length } }),
    after: {
      timezone: after.timezone ?? null,
      count: after.dates.length,
      added: added.slice(0, AUDIT_DATES),
      removed: removed.slice(0, AUDIT_DATES),
      ...(added.length + removed.length > 2 * AUDIT_DATES && { truncated: true }),
    },
  };
}

/**
 * Throws `INVALID_ARGUMENT` unless the store holds every calendar the exclusion lists name, naming
 * the first list (`what`) that names a missing one, and the ids: one `getMany` per 1,000 distinct
 * ids (none without calendars).
 */
export async function requireCalendars(
  store: Store,
  lists: readonly { exclude: CompiledExclude | undefined; what: string }[],
): Promise<void> {
  const ids = [...new Set(lists.flatMap((l) => l.exclude?.calendars ?? []))];
  if (ids.length === 0) return;
  const missing = new Set<string>();
  for (let i = 0; i < ids.length; i += MAX_BATCH) {
    const chunk = ids.slice(i, i + MAX_BATCH);
    const found = await store.getMany(chunk.map((id) => keys.calendar(id)));
    chunk.forEach((id, n) => {
      if (found[n] === null || found[n] === undefined) missing.add(id);
    });
  }
  if (missing.size === 0) return;
  for (const l of lists) {
    const named = (l.exclude?.calendars ?? []).filter((id) => missing.has(id));
    if (named.length > 0) throw unknownCalendars(l.what, named);
  }
}

/** The calendars API of one node (`scheduler.calendars`). */
export function createCalendars(state: NodeState): Calendars {
  const store = state.store;
  const read = async (id: string): Promise<CalendarRecord | undefined> => {
    const value = await store.get(keys.calendar(id));
    return value === null ? undefined : (JSON.parse(value) as CalendarRecord);
  };
  const changed = (): WriteOp => ({ op: 'put', key: keys.calendarRevision, value: state.newId() });
  return {
    upsert: async (input, options = {}) => {
      checkOptionNames('calendars.upsert', options, ['actor']);
      const actor = actorOf(options, state.audit, 'calendars.upsert');
      const calendar = validateCalendar(input);
      const [before, now] = await Promise.all([read(calendar.id), store.now()]);
      const record: CalendarRecord = { ...calendar, updatedAt: now };
      const same =
        before !== undefined &&
        before.timezone === calendar.timezone &&
        before.dates.join() === calendar.dates.join();
      // The record, the change signal every poll reads, and the audit entry: one apply.
      await store.apply([
        { op: 'put', key: keys.calendar(calendar.id), value: JSON.stringify(record) },
        ...(same
          ? []
          : [
              changed(),
              ...auditOps(
                {
                  action: 'calendars.upsert',
                  target: calendar.id,
                  actor,
                  ...changeSnapshots(before, calendar),
                },
                now,
                state.audit,
              ),
            ]),
      ]);
      state.calendars.changedHere();
    },
    get: async (id) => {
      const found = await read(validateCalendarId(id, 'calendars.get: id'));
      return found && publicView(found);
    },
    remove: async (id, options = {}) => {
      checkOptionNames('calendars.remove', options, ['actor']);
      const actor = actorOf(options, state.audit, 'calendars.remove');
      const [found, now] = await Promise.all([
        read(validateCalendarId(id, 'calendars.remove: id')),
        store.now(),
      ]);
      if (!found) return false;
      await store.apply([
        { op: 'delete', key: keys.calendar(id) },
        changed(),
        ...auditOps(
          {
            action: 'calendars.remove',
            target: id,
            actor,
            before: { timezone: found.timezone ?? null, count: found.dates.length },
          },
          now,
          state.audit,
        ),
      ]);
      state.calendars.changedHere();
      return true;
    },
    list: async (options = {}) => {
      checkOptionNames('calendars.list', options, ['after', 'limit']);
      const { after, limit = LIST_MAX } = options;
      if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX)
        throw invalidArgument(`calendars.list: limit must be an integer from 1 to ${LIST_MAX}`);
      if (after !== undefined) validateCalendarId(after, 'calendars.list: after');
      const records = await store.scan(keys.calendarPrefix, {
        limit,
        ...(after !== undefined && { after: keys.calendar(after) }),
      });
      return records.map((r) => publicView(JSON.parse(r.value) as CalendarRecord));
    },
  };
}
