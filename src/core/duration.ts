import { invalidArgument } from './errors.js';

/** A length of time: milliseconds as a number, `'250ms' '30s' '5m' '2h' '1d'` (and sums such as `'1h30m'`), or ISO-8601 `'PT5M'`, `'P1DT2H'`. */
export type Duration = number | string;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;
const SIMPLE = /^\s*((?:\d+(?:\.\d+)?\s*(?:ms|s|m|h|d|w)\s*)+)$/;
const SIMPLE_PART = /(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)/g;
// Years and months are refused on purpose: their length depends on the calendar.
const ISO =
  /^P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/i;

/**
 * String durations already parsed, e.g. `'30s'` → 30000. Durations are nearly always constants in
 * the caller's code, and `tryLock` parses one on every call, so a hit skips two regular
 * expressions. Bounded: once full, new strings are parsed every time (still correctly).
 */
const parsedStrings = new Map<string, number>();
const MAX_PARSED_STRINGS = 256;

/** Characters a duration string may have at most. */
export const MAX_DURATION_TEXT = 64;

/**
 * Parses a {@link Duration} into whole milliseconds (rounded). Throws `INVALID_ARGUMENT` naming
 * `what` for anything else: negative, NaN, infinite, empty, unknown unit, or calendar units.
 *
 * @example
 * parseDuration('5m') // 300000
 * parseDuration('PT0.5S') // 500
 * parseDuration(250) // 250
 */
export function parseDuration(value: Duration, what = 'duration'): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) {
      throw invalidArgument(`${what} must be a finite, non-negative number of milliseconds; got ${value}`);
    }
    return Math.round(value);
  }
  if (typeof value !== 'string') {
    throw invalidArgument(
      `${what} must be a number of milliseconds or a string such as '30s'; got ${typeof value}`,
    );
  }
  // The longest real spelling is ~20 characters ('PT1H30M15.250S'); a longer one is refused
  // without echoing it (a megabyte of text in an error message helps nobody).
  if (value.length > MAX_DURATION_TEXT)
    throw invalidArgument(
      `${what} is ${value.length} characters long; a duration is at most ${MAX_DURATION_TEXT} ('30s', 'PT5M')`,
    );
  const known = parsedStrings.get(value);
  if (known !== undefined) return known;
  const ms = parseText(value);
  if (ms === undefined) {
    throw invalidArgument(
      `${what} ${JSON.stringify(value)} is not a duration: use milliseconds (250), '250ms', '30s', '5m', '2h', '1d', or ISO-8601 such as 'PT5M' (no years or months)`,
    );
  }
  if (parsedStrings.size < MAX_PARSED_STRINGS) parsedStrings.set(value, ms);
  return ms;
}

/** Whole ms of a duration string, or `undefined` when it is not one. */
function parseText(value: string): number | undefined {
  const text = value.trim();
  const simple = SIMPLE.exec(text);
  if (simple) {
    let total = 0;
    for (const part of text.matchAll(SIMPLE_PART)) {
      total += Number(part[1]) * UNIT_MS[part[2] as keyof typeof UNIT_MS];
    }
    return Math.round(total);
  }
  const iso = ISO.exec(text);
  if (iso && text.length > 1 && !/T$/i.test(text)) {
    const [, w, d, h, m, s] = iso;
    const total =
      Number(w ?? 0) * UNIT_MS.w +
      Number(d ?? 0) * UNIT_MS.d +
      Number(h ?? 0) * UNIT_MS.h +
      Number(m ?? 0) * UNIT_MS.m +
      Number(s ?? 0) * UNIT_MS.s;
    return Math.round(total);
  }
  return undefined;
}

/**
 * The whole ms of `value` when it is a valid {@link Duration}, else `undefined` — without building
 * an error message, for hot paths that fall back to {@link parseDuration} (which names the field)
 * only when this answers `undefined`.
 */
export function durationMs(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
  if (typeof value !== 'string') return undefined;
  const known = parsedStrings.get(value);
  if (known !== undefined) return known;
  const ms = parseText(value);
  if (ms !== undefined && parsedStrings.size < MAX_PARSED_STRINGS) parsedStrings.set(value, ms);
  return ms;
}

/** Like {@link parseDuration} but also refuses 0. */
export function parsePositiveDuration(value: Duration, what = 'duration'): number {
  const ms = parseDuration(value, what);
  if (ms <= 0)
    throw invalidArgument(
      `${what} must be greater than 0 (at least 1 ms once rounded); got ${JSON.stringify(value)}`,
    );
  return ms;
}
