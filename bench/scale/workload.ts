/**
 * The stored schedules of the scale bench, the same for every system: per-user daily crons
 * (`M H * * *`) spread over five time zones. Schedule `u<i>` for `i < due` fires at the fire
 * instant T (each zone's local hour and minute of T); the others fire once a day at a minute at
 * least four hours away from when they were written, so nothing else falls due during a run.
 * Generated from the index alone, so the seeding processes and the orchestrator agree without
 * passing lists around.
 */

/** Time zones of the per-user schedules (offsets +0, −5/−4, +1/+2, +5:30, +10/+11). */
export const ZONES = [
  'UTC',
  'America/New_York',
  'Europe/Berlin',
  'Asia/Kolkata',
  'Australia/Sydney',
] as const;

export interface UserSchedule {
  /** `u<index>`: the schedule id (a BullMQ job scheduler id, a pg-boss schedule key, a table row). */
  id: string;
  /** Daily cron in `tz`: `M H * * *`. */
  cron: string;
  tz: string;
  /** The instant it fires next (T for the due ones). */
  nextAt: number;
}

const MINUTE = 60_000;
/** Other schedules fire this many minutes after they were written, at the soonest… */
const OTHER_MIN_OFFSET = 240;
/** …and at the latest (a day has 1,440). */
const OTHER_MAX_OFFSET = 1_380;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Local hour and minute of `instant` in `tz`. */
export function localHourMinute(instant: number, tz: string): { hour: number; minute: number } {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone: tz,
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(tz, f);
  }
  let hour = 0;
  let minute = 0;
  for (const part of f.formatToParts(instant)) {
    if (part.type === 'hour') hour = Number(part.value);
    if (part.type === 'minute') minute = Number(part.value);
  }
  return { hour, minute };
}

function dailyAt(index: number, instant: number): UserSchedule {
  const tz = ZONES[index % ZONES.length]!;
  const { hour, minute } = localHourMinute(instant, tz);
  return { id: `u${index}`, cron: `${minute} ${hour} * * *`, tz, nextAt: instant };
}

/** Schedule `index` (< due), firing at the fire instant `fireAt` (a minute boundary). */
export function dueSchedule(index: number, fireAt: number): UserSchedule {
  return dailyAt(index, fireAt);
}

/**
 * Schedule `index` (≥ due), written at `writtenAt`: a daily cron at a minute 4 to 23 hours later,
 * spread by a fixed hash of the index.
 */
export function otherSchedule(index: number, writtenAt: number): UserSchedule {
  const spread = OTHER_MAX_OFFSET - OTHER_MIN_OFFSET;
  const offset = OTHER_MIN_OFFSET + ((Math.imul(index + 1, 2_654_435_761) >>> 0) % spread);
  return dailyAt(index, ceilMinute(writtenAt) + offset * MINUTE);
}

/** The first minute boundary at or after `ms`. */
export function ceilMinute(ms: number): number {
  return Math.ceil(ms / MINUTE) * MINUTE;
}
