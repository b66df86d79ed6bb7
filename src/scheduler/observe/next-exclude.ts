import { type CalendarLookup, type CompiledExclude, compileExclude } from '../../schedule/exclude.js';
import type { Store } from '../../store/types.js';
import { type CalendarRecord, toDates } from '../control/calendar-cache.js';
import { keys } from '../keys.js';

/** What `next()` needs to skip excluded fire times: the compiled list and the calendars it names. */
export interface NextExclude {
  exclude: CompiledExclude;
  calendars: CalendarLookup;
}

/**
 * The exclusions of a trigger as its record keeps them (a job record's `options.exclude`, a
 * stored schedule's `exclude`), with the calendars they name read in one `getMany` (a calendar
 * not stored excludes nothing, as on the nodes); `undefined` without exclusions (no read).
 */
export async function nextExclude(
  store: Store,
  recorded: unknown,
  timezone: string | undefined,
  what: string,
): Promise<NextExclude | undefined> {
  const exclude = compileExclude(recorded, timezone, what);
  if (exclude === undefined) return undefined;
  const held = new Map<string, ReturnType<typeof toDates>>();
  if (exclude.calendars.length > 0) {
    const values = await store.getMany(exclude.calendars.map((id) => keys.calendar(id)));
    exclude.calendars.forEach((id, i) => {
      const value = values[i];
      if (value !== null && value !== undefined) held.set(id, toDates(JSON.parse(value) as CalendarRecord));
    });
  }
  return { exclude, calendars: (id) => held.get(id) };
}
