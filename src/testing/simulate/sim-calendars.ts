/**
 * Calendars in a simulation (`SimulateOptions.calendars`): stored on the store server through the
 * real `scheduler.calendars.upsert` before the nodes boot (so the real validation applies), and
 * what the checker reads them as when it judges an `excluded` skip.
 */
import { invalidArgument, OncelyError } from '../../core/errors.js';
import { silentLogger } from '../../core/logger.js';
import { type CalendarLookup, type CompiledExclude, isExcluded } from '../../schedule/exclude.js';
import { validateCalendar } from '../../scheduler/control/calendars.js';
import { createScheduler } from '../../scheduler/scheduler.js';
import type { Store } from '../../store/types.js';
import type { History } from './history.js';
import type { SimCalendar } from './options.js';
import { NodeClock, type VirtualTime } from './virtual-time.js';

/** Calendars per simulation at most. */
const MAX_SIM_CALENDARS = 100;

/** Validates the calendars as `calendars.upsert` does; bad input throws `INVALID_ARGUMENT` naming it. */
export function checkCalendars(calendars: readonly SimCalendar[] | undefined): CalendarLookup {
  const held = new Map<string, { dates: Set<string>; timezone?: string | undefined }>();
  if (calendars !== undefined && (!Array.isArray(calendars) || calendars.length > MAX_SIM_CALENDARS))
    throw invalidArgument(`simulate: calendars must be a list of at most ${MAX_SIM_CALENDARS}`);
  for (const [i, c] of (calendars ?? []).entries()) {
    let valid: ReturnType<typeof validateCalendar>;
    try {
      valid = validateCalendar(c);
    } catch (err) {
      if (!(err instanceof OncelyError)) throw err;
      throw invalidArgument(`simulate: calendars[${i}]: ${err.message.replace(/^calendars\.upsert: /, '')}`);
    }
    held.set(valid.id, { dates: new Set(valid.dates), timezone: valid.timezone });
  }
  return (id) => held.get(id);
}

/** Stores the calendars on the server (virtual time 0, before the nodes boot). */
export async function writeCalendars(
  calendars: readonly SimCalendar[] | undefined,
  server: Store,
  time: VirtualTime,
  history: History,
): Promise<void> {
  if (calendars === undefined || calendars.length === 0) return;
  const setup = createScheduler({
    store: server,
    node: 'sim-setup-calendars',
    clock: new NodeClock(time, 1, 0, () => 0),
    logger: silentLogger,
  });
  for (const c of calendars) await setup.calendars.upsert(c);
  history.line('setup', `stored ${calendars.length} calendar(s): ${calendars.map((c) => c.id).join(', ')}`);
}

/** Whether `fireTime` (store ms) is excluded by any of `lists`, reading `calendars`. */
export function excludedBy(
  lists: readonly CompiledExclude[],
  fireTime: number,
  calendars: CalendarLookup,
): boolean {
  return lists.some((x) => isExcluded(x, fireTime, calendars));
}
