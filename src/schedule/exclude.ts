import { Cron } from 'croner';
import { invalidArgument, type OncelyError } from '../core/errors.js';
import { requireWellFormed } from '../store/validate.js';
import { cronShapeProblem } from './cron-fields.js';
import { type CompiledTrigger, MAX_AT_MS, MAX_CRON_LENGTH, validateTimezone } from './trigger.js';

/**
 * Fire times a trigger skips (recorded skipped, reason `excluded`), one rule each; a fire time
 * matching any rule of a list is excluded. Pure: the same answer on every node.
 *
 * - `{ cron, timezone? }` — as Quartz's `CronCalendar`: the fire time lies in a time the pattern
 *   matches, at the pattern's own resolution: a 5-field pattern matches whole minutes (every
 *   instant of 09:00-09:59 for `* 9 * * *`), a 6-field one (seconds first) whole seconds.
 *   `timezone`: the pattern's IANA zone (default UTC).
 * - `{ from, to }` — the half-open range `[from, to)`: a `Date`, an ISO-8601 string or epoch ms.
 * - `{ calendar }` — the fire time's date (`YYYY-MM-DD`) in the calendar's time zone (else the
 *   trigger's, else UTC) is one of the calendar's dates (`scheduler.calendars.upsert`).
 *
 * @example
 * scheduler.define('report', {
 *   cron: '0 9 * * *',
 *   exclude: [{ calendar: 'holidays-de' }, { cron: '* * * * 0,6' }, { from: '2026-12-24', to: '2027-01-02' }],
 * }, report);
 */
export type Exclusion =
  | {
      /** A cron pattern (croner syntax): 5 fields match whole minutes, 6 (seconds first) whole seconds. */
      cron: string;
      /** IANA time zone of the pattern (default UTC). */
      timezone?: string;
    }
  | {
      /** Start of the excluded range (included): a `Date`, an ISO-8601 string or epoch ms. */
      from: Date | string | number;
      /** End of the excluded range (not included); after `from`. */
      to: Date | string | number;
    }
  | {
      /** The id of a calendar stored with `scheduler.calendars.upsert`. */
      calendar: string;
    };

/** The dates of one calendar as a node holds them (control/calendars.ts). */
export interface CalendarDates {
  /** Its dates, `YYYY-MM-DD`. */
  dates: ReadonlySet<string>;
  /** Its time zone, if it has one. */
  timezone?: string | undefined;
}

/** The calendars a node holds, by id (`undefined`: no such calendar: it excludes nothing). */
export type CalendarLookup = (id: string) => CalendarDates | undefined;

type Rule =
  | { kind: 'cron'; pattern: Cron; unitMs: number }
  | { kind: 'range'; from: number; to: number }
  | { kind: 'calendar'; id: string };

/** A validated exclusion list (see {@link compileExclude}). */
export interface CompiledExclude {
  rules: readonly Rule[];
  /** The calendar ids the rules name (each once). */
  calendars: readonly string[];
  /** The zone a calendar without one is read in: the trigger's (cron), else UTC. */
  timezone: string;
  /** The list as JSON can keep it (ranges as ISO-8601 strings): job records, next(), the checker. */
  source: Exclusion[];
}

/** Rules per list at most (a calendar holds the long lists of dates). */
export const MAX_EXCLUSIONS = 100;
/** Characters a calendar id may have at most, counting `|` and `%` as 3 (as stored schedule ids). */
export const MAX_CALENDAR_ID_LENGTH = 200;

/** Throws `INVALID_ARGUMENT` unless `id` can be a calendar's id (1-200 printable characters). */
export function validateCalendarId(id: unknown, what = 'calendar id'): string {
  if (
    typeof id !== 'string' ||
    id === '' ||
    id.length + 2 * (id.match(/[|%]/g)?.length ?? 0) > MAX_CALENDAR_ID_LENGTH ||
    /\p{Cc}/u.test(id)
  )
    throw invalidArgument(
      `${what} must be 1-${MAX_CALENDAR_ID_LENGTH} printable characters ('|' and '%' count 3); got ${JSON.stringify(id)}`,
    );
  requireWellFormed(id, what);
  return id;
}

function instant(value: unknown, what: string): number {
  const ms = value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > MAX_AT_MS)
    throw invalidArgument(
      `${what} must be a Date, an ISO-8601 string or epoch milliseconds from 1970 to 9999; got ${JSON.stringify(value)}`,
    );
  return ms;
}

/** Compiled cron rules by pattern and zone: a fan-out of schedules repeats a few. */
const cronRules = new Map<string, { pattern: Cron; unitMs: number }>();

function cronRule(cron: unknown, timezone: unknown, what: string): { pattern: Cron; unitMs: number } {
  if (typeof cron !== 'string' || cron.trim() === '' || cron.length > MAX_CRON_LENGTH)
    throw invalidArgument(`${what}: cron must be a pattern of at most ${MAX_CRON_LENGTH} characters`);
  const zone = validateTimezone((timezone ?? 'UTC') as string, `${what}: timezone`);
  const signature = `${zone}\u0000${cron}`;
  const known = cronRules.get(signature);
  if (known) return known;
  const shape = cronShapeProblem(cron);
  if (shape !== undefined)
    throw invalidArgument(`${what}: cron ${JSON.stringify(cron)} is invalid: ${shape}`);
  let pattern: Cron;
  try {
    pattern = new Cron(cron, { timezone: zone, mode: '5-or-6-parts' });
  } catch (err) {
    throw invalidArgument(`${what}: cron ${JSON.stringify(cron)} is invalid: ${(err as Error).message}`);
  }
  const unitMs = cron.trim().split(/\s+/).length === 6 ? 1_000 : 60_000;
  if (cronRules.size >= 1_000) cronRules.clear();
  const rule = { pattern, unitMs };
  cronRules.set(signature, rule);
  return rule;
}

/**
 * Validates an `exclude` list once (define, upsert, a due-index read): `undefined` for none (or
 * an empty list), so that a trigger without exclusions costs nothing per fire time. `timezone`:
 * the trigger's cron zone, where calendars without a zone of their own are read. Every problem
 * is `INVALID_ARGUMENT` naming `what`, the entry and the field. Calendar ids are checked for
 * shape only here; that they exist is checked where the store can be read (upsert, start()).
 */
export function compileExclude(
  input: unknown,
  timezone: string | undefined,
  what: string,
): CompiledExclude | undefined {
  if (input === undefined) return undefined;
  if (!Array.isArray(input) || input.length > MAX_EXCLUSIONS)
    throw invalidArgument(
      `${what}: exclude must be a list of at most ${MAX_EXCLUSIONS} entries { cron, timezone? } | { from, to } | { calendar }`,
    );
  if (input.length === 0) return undefined;
  const rules: Rule[] = [];
  const source: Exclusion[] = [];
  const calendars = new Set<string>();
  input.forEach((raw: unknown, i) => {
    const where = `${what}: exclude[${i}]`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
      throw invalidArgument(`${where} must be an object { cron, timezone? } | { from, to } | { calendar }`);
    const e = raw as Record<string, unknown>;
    const fields = Object.keys(e).sort().join(',');
    if (fields === 'cron' || fields === 'cron,timezone') {
      rules.push({ kind: 'cron', ...cronRule(e.cron, e.timezone, where) });
      source.push({
        cron: e.cron as string,
        ...(e.timezone !== undefined && { timezone: e.timezone as string }),
      });
    } else if (fields === 'from,to') {
      const from = instant(e.from, `${where}: from`);
      const to = instant(e.to, `${where}: to`);
      if (to <= from) throw invalidArgument(`${where}: to must be after from (the range is [from, to))`);
      rules.push({ kind: 'range', from, to });
      source.push({ from: new Date(from).toISOString(), to: new Date(to).toISOString() });
    } else if (fields === 'calendar') {
      const id = validateCalendarId(e.calendar, `${where}: calendar`);
      rules.push({ kind: 'calendar', id });
      calendars.add(id);
      source.push({ calendar: id });
    } else
      throw invalidArgument(
        `${where} has the fields {${fields}}; give { cron, timezone? }, { from, to } or { calendar }`,
      );
  });
  return { rules, calendars: [...calendars], timezone: timezone ?? 'UTC', source };
}

/** The trigger's cron time zone (through its startAt/endAt bounds), where calendars without a zone are read. */
export function cronZone(trigger: CompiledTrigger | undefined): string | undefined {
  const plain = trigger?.kind === 'bounded' ? trigger.inner : trigger;
  return plain?.kind === 'cron' ? plain.timezone : undefined;
}

/** `YYYY-MM-DD` formatters by time zone (en-CA writes dates so). */
const dateFormats = new Map<string, Intl.DateTimeFormat>();

/** The date (`YYYY-MM-DD`) of the instant `ms` in the IANA zone `timezone`. */
export function dateIn(ms: number, timezone: string): string {
  let format = dateFormats.get(timezone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-CA', {
      timeZone: timezone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    });
    dateFormats.set(timezone, format);
  }
  return format.format(ms);
}

/**
 * Whether the fire time `fireTime` (epoch ms, nominal: jitter does not move it) is excluded by a
 * rule of `exclude`. A calendar `calendars` does not hold (removed) excludes nothing.
 */
export function isExcluded(exclude: CompiledExclude, fireTime: number, calendars: CalendarLookup): boolean {
  for (const rule of exclude.rules) {
    if (rule.kind === 'range') {
      if (fireTime >= rule.from && fireTime < rule.to) return true;
    } else if (rule.kind === 'cron') {
      if (rule.pattern.match(new Date(fireTime - (fireTime % rule.unitMs)))) return true;
    } else {
      const cal = calendars(rule.id);
      if (cal?.dates.has(dateIn(fireTime, cal.timezone ?? exclude.timezone))) return true;
    }
  }
  return false;
}

/** Thrown where a list names calendars the store does not hold: `INVALID_ARGUMENT` naming them. */
export function unknownCalendars(what: string, ids: readonly string[]): OncelyError {
  return invalidArgument(
    `${what}: exclude names ${ids.length === 1 ? 'a calendar' : 'calendars'} the store does not hold: ${ids.map((id) => JSON.stringify(id)).join(', ')}; create ${ids.length === 1 ? 'it' : 'them'} first with scheduler.calendars.upsert({ id, dates })`,
  );
}
