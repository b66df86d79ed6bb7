import { Cron } from 'croner';
import { type Duration, parsePositiveDuration } from '../core/duration.js';
import { invalidArgument } from '../core/errors.js';
import { cronShapeProblem } from './cron-fields.js';

/** When a job fires: exactly one of `cron`, `every` or `at`. */
export type Trigger =
  | {
      /** A cron pattern: 5 fields, or 6 with seconds first; `L`, `W`, `#` and names (croner syntax). */
      cron: string;
      /** IANA time zone of the pattern (default UTC). */
      timezone?: string;
    }
  | {
      /** An interval: fires on multiples of it counted from the Unix epoch. */
      every: Duration;
    }
  | {
      /** One fire time: a `Date`, an ISO-8601 string or epoch milliseconds. */
      at: Date | string | number;
    };

/** A validated trigger, ready for repeated fire-time maths. */
export type CompiledTrigger = PlainTrigger | BoundedTrigger;

/** A validated cron, every or at trigger, without bounds. */
export type PlainTrigger =
  | { kind: 'cron'; cron: string; timezone: string; pattern: Cron }
  | { kind: 'every'; everyMs: number }
  | { kind: 'at'; at: number };

/**
 * A trigger with `startAt`/`endAt` (schedule/bounds.ts): only the fire times of `inner` from
 * `startAt` to `endAt`, both inclusive (epoch ms; croner's startAt/stopAt). `inner` is shared
 * (shared-triggers.ts), so its memoised cron answers serve every bounded copy.
 */
export interface BoundedTrigger {
  kind: 'bounded';
  inner: PlainTrigger;
  /** The earliest fire time allowed (0: no lower bound). */
  startAt: number;
  /** The latest fire time allowed (`MAX_AT_MS`: no upper bound). */
  endAt: number;
}

/**
 * Longest interval (100 years, as the longest lease): anything longer is surely a unit mistake,
 * and fire times past year 275760 are no `Date` at all.
 */
export const MAX_EVERY_MS = 100 * 365 * 86_400_000;
/** Latest one-off instant, 9999-12-31T23:59:59.999Z: fire times are kept as 15-digit epoch ms. */
export const MAX_AT_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** Every time zone name this runtime knows, checked once per name. */
const knownZones = new Map<string, boolean>();

/** Characters a cron pattern may have at most (a real one is well under 100). */
export const MAX_CRON_LENGTH = 1024;
/** Characters a time zone name may have at most (the longest IANA name has 32). */
export const MAX_TIMEZONE_LENGTH = 64;

/** Throws `INVALID_ARGUMENT` unless `timezone` is an IANA zone name the runtime knows (or `UTC`). */
export function validateTimezone(timezone: string, what = 'timezone'): string {
  if (typeof timezone !== 'string' || timezone === '')
    throw invalidArgument(`${what} must be an IANA time zone name such as 'Europe/Berlin'`);
  if (timezone.length > MAX_TIMEZONE_LENGTH)
    throw invalidArgument(
      `${what} is ${timezone.length} characters long; an IANA time zone name is at most ${MAX_TIMEZONE_LENGTH}`,
    );
  let ok = knownZones.get(timezone);
  if (ok === undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: timezone });
      ok = true;
    } catch {
      ok = false;
    }
    knownZones.set(timezone, ok);
  }
  if (!ok)
    throw invalidArgument(
      `${what} ${JSON.stringify(timezone)} is not a known IANA time zone (e.g. 'UTC', 'Europe/Berlin', 'America/New_York')`,
    );
  return timezone;
}

/** Epoch ms of a `Date`, ISO-8601 string or epoch ms from 1970 to 9999; else `INVALID_ARGUMENT` naming `what`. */
export function toEpochMs(at: Date | string | number, what: string): number {
  const ms = at instanceof Date ? at.getTime() : typeof at === 'string' ? Date.parse(at) : at;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw invalidArgument(
      `${what} must be a Date, an ISO-8601 string or epoch milliseconds; got ${JSON.stringify(at)}`,
    );
  }
  if (ms < 0 || ms > MAX_AT_MS)
    throw invalidArgument(
      `${what} must be from 1970-01-01 to 9999-12-31 (epoch ms 0 to ${MAX_AT_MS}); got ${ms}${ms > MAX_AT_MS && ms / 1000 <= MAX_AT_MS ? ' (epoch microseconds? use milliseconds)' : ''}`,
    );
  return ms;
}

/** croner 11's year table for a `*` year: one entry per year 0..9999, all 1. */
const ALL_YEARS: readonly number[] = Object.freeze(new Array<number>(10_000).fill(1));

/**
 * croner 11.0.1 (pinned) gives every pattern its own 10,000-entry year table (~80 KB), all ones
 * when the year field is `*` — always, in '5-or-6-parts' mode — and reads it only when the year is
 * not `*` (`starYear`). A bulk upsert or a due-index page holds thousands of patterns at once (per
 * user at their own minute, in their own zone: 100,000 schedules held ~470 MB of them), so those
 * patterns share one frozen table: a croner that wrote to it would throw rather than let one
 * pattern change another's.
 */
function shareYearTable(cron: Cron): void {
  const pattern = (cron as unknown as { _states?: { pattern?: { starYear?: unknown; year?: unknown } } })
    ._states?.pattern;
  if (pattern?.starYear === true && Array.isArray(pattern.year) && pattern.year.length === ALL_YEARS.length)
    pattern.year = ALL_YEARS;
}

/**
 * Validates a trigger once (at `define`, not at the first fire): one trigger kind only, a cron
 * pattern croner accepts (5 or 6 fields, seconds first when 6; `L`, `W`, `#`; names), a known time
 * zone (default UTC), a positive interval, a valid instant. `what` names the job in messages.
 */
export function compileTrigger(trigger: Trigger, what = 'trigger'): PlainTrigger {
  if (trigger === null || typeof trigger !== 'object')
    throw invalidArgument(`${what}: expected { cron } | { every } | { at }`);
  const t = trigger as { cron?: unknown; every?: unknown; at?: unknown; timezone?: unknown };
  const kinds = (['cron', 'every', 'at'] as const).filter((k) => t[k] !== undefined);
  if (kinds.length !== 1) {
    throw invalidArgument(
      kinds.length === 0
        ? `${what}: give one of cron, every or at`
        : `${what}: give only one of cron, every or at; got ${kinds.join(' and ')}`,
    );
  }
  if (t.timezone !== undefined && kinds[0] !== 'cron')
    throw invalidArgument(`${what}: timezone applies to cron triggers only`);
  if (t.cron !== undefined) {
    if (typeof t.cron !== 'string' || t.cron.trim() === '')
      throw invalidArgument(`${what}: cron must be a pattern string such as '0 9 * * *'`);
    // Checked before croner sees it: a 1 MB pattern took croner a second, and its error echoed it.
    if (t.cron.length > MAX_CRON_LENGTH)
      throw invalidArgument(
        `${what}: cron is ${t.cron.length} characters long; a pattern is at most ${MAX_CRON_LENGTH}`,
      );
    const timezone = validateTimezone((t.timezone as string | undefined) ?? 'UTC', `${what}: timezone`);
    const shape = cronShapeProblem(t.cron);
    if (shape !== undefined)
      throw invalidArgument(`${what}: cron ${JSON.stringify(t.cron)} is invalid: ${shape}`);
    let pattern: Cron;
    try {
      pattern = new Cron(t.cron, { timezone, mode: '5-or-6-parts' });
    } catch (err) {
      throw invalidArgument(`${what}: cron ${JSON.stringify(t.cron)} is invalid: ${(err as Error).message}`);
    }
    shareYearTable(pattern);
    return { kind: 'cron', cron: t.cron, timezone, pattern };
  }
  if (t.every !== undefined) {
    const everyMs = parsePositiveDuration(t.every as Duration, `${what}: every`);
    if (everyMs > MAX_EVERY_MS)
      throw invalidArgument(
        `${what}: every must be at most 100 years (${MAX_EVERY_MS} ms); got ${everyMs} ms`,
      );
    return { kind: 'every', everyMs };
  }
  return { kind: 'at', at: toEpochMs(t.at as Date | string | number, `${what}: at`) };
}

/**
 * Refuses a cron pattern no date ever matches (`0 0 30 2 *`: February 30th): croner accepts it,
 * and a job on it would silently never run. Costs one fire-time search (under a millisecond for a
 * pattern that fires; tens of ms to prove one never does), so it is asked where a trigger is
 * defined (`define`, `schedules.upsert`), not where a stored one is read back.
 */
export function requireFires(trigger: CompiledTrigger, what = 'trigger'): CompiledTrigger {
  if (trigger.kind !== 'cron' || fires.has(trigger)) return trigger;
  if (trigger.pattern.nextRun() === null)
    throw invalidArgument(
      `${what}: cron ${JSON.stringify(trigger.cron)} never fires (no date matches every field, e.g. February 30th)`,
    );
  fires.add(trigger);
  return trigger;
}

/**
 * Cron triggers seen to fire. Whether a 5- or 6-field pattern ever fires does not depend on when
 * it is asked (it has no year), so a shared compiled trigger is checked once.
 */
const fires = new WeakSet<CompiledTrigger>();
