import { type CompiledTrigger, compileTrigger, type Trigger } from './trigger.js';

/** Distinct triggers kept compiled at most; past it the cache starts over. */
const MAX_SHARED = 10_000;

/** Compiled triggers by their fields, shared by everything in the process that compiles stored schedules. */
const shared = new Map<string, CompiledTrigger>();

/**
 * `compileTrigger(t)`, once per distinct trigger in the process: stored schedules repeat a few
 * triggers (every user's 09:00 in a few zones), or many across calls — a bulk upsert of a million
 * per-user crons in 5,000-schedule calls, a due-index read per poll — and each croner pattern
 * costs tens of microseconds to build. A compiled trigger is immutable and holds no caller's name
 * (`what` is only for the error a bad one throws — a function builds it only then; errors are not
 * cached), so sharing is safe.
 * Keyed by the trigger fields as given (`'10s'` and `10000` are two entries, both right).
 */
export function compileShared(trigger: Trigger, what: string | (() => string)): CompiledTrigger {
  const t = trigger as { cron?: unknown; every?: unknown; at?: unknown; timezone?: unknown };
  const at = t.at instanceof Date ? t.at.getTime() : t.at;
  const signature = JSON.stringify([t.cron, t.every, at, t.timezone, Object.keys(trigger).length]);
  const known = shared.get(signature);
  if (known) return known;
  const compiled = compileTrigger(trigger, typeof what === 'string' ? what : what());
  if (shared.size >= MAX_SHARED) shared.clear();
  shared.set(signature, compiled);
  return compiled;
}

/** Compiled triggers of stored schedule records, by {@link storedSignature}. */
const storedShared = new Map<string, CompiledTrigger>();

/**
 * {@link compileShared} for a stored schedule's record as read back (due/due-index.ts): keyed on
 * its trigger fields read in place, the trigger built only on a miss, where copying them out of
 * each record first (`{ id, job, data, v, …trigger }`) and keying the copy by its JSON ran for
 * every due entry read: parse and compile took 1.52 µs an entry that way, 1.13 this way
 * (measured alone; a fan-out spends ~60-120 µs per occurrence in all). Only `cron`, `every`, `at`
 * and `timezone` make a trigger (compileTrigger reads nothing else), so the result is what
 * compileShared gives for the record's fields.
 */
export function compileStored(record: StoredTriggerFields, what: () => string): CompiledTrigger {
  const signature = storedSignature(record);
  const known = storedShared.get(signature);
  if (known) return known;
  const t: StoredTriggerFields = {};
  if (record.cron !== undefined) t.cron = record.cron;
  if (record.every !== undefined) t.every = record.every;
  if (record.at !== undefined) t.at = record.at;
  if (record.timezone !== undefined) t.timezone = record.timezone;
  const compiled = compileTrigger(t as Trigger, what());
  if (storedShared.size >= MAX_SHARED) storedShared.clear();
  storedShared.set(signature, compiled);
  return compiled;
}

/** The trigger fields of a stored schedule's record (parsed JSON: any value may be of any type). */
interface StoredTriggerFields {
  cron?: unknown;
  every?: unknown;
  at?: unknown;
  timezone?: unknown;
}

/**
 * The four fields with their types, so that `every` 10000 and '10000' key apart (as JSON would);
 * a string is prefixed with its length, so no text can run into the next field.
 */
function storedSignature(r: StoredTriggerFields): string {
  return `${part(r.cron)}\u0000${part(r.every)}\u0000${part(r.at)}\u0000${part(r.timezone)}`;
}

function part(v: unknown): string {
  if (v === undefined) return '';
  if (typeof v === 'string') return `s${v.length}:${v}`;
  if (typeof v === 'number') return `n${v}`;
  return `j${JSON.stringify(v)}`;
}
