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
