import { Cron } from 'croner';
import { invalidArgument } from '../../core/errors.js';
import { validateTimezone } from '../../schedule/trigger.js';

/**
 * The reflect-metadata keys @nestjs/schedule (4.x to 12.x, `schedule.constants`) sets on a method
 * decorated with `@Cron()`, `@Interval()` or `@Timeout()`, and its `SchedulerType` values. Read
 * here rather than imported, so `oncely/nestjs` loads without @nestjs/schedule (`@ClusterJob`
 * alone does not need it).
 */
const SCHEDULER_TYPE = 'SCHEDULER_TYPE';
const SCHEDULE_CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';
const SCHEDULE_INTERVAL_OPTIONS = 'SCHEDULE_INTERVAL_OPTIONS';
const CRON = 1;
const TIMEOUT = 2;
const INTERVAL = 3;

/** How a `@Once` method is scheduled by @nestjs/schedule, and so which fire time a tick is for. */
export interface NestSchedule {
  kind: 'cron' | 'interval' | 'timeout';
  /** The decorator as written, for messages: `@Cron('0 * * * *')`. */
  describe: string;
  /**
   * The fire time (epoch ms) that a tick arriving at `nowMs` (this process's clock) belongs to;
   * `undefined` for `@Timeout`, which has one occurrence per start-up wave (see `occurrenceKey`).
   */
  fireTime(nowMs: number): number | undefined;
}

/** True when the method carries any of @nestjs/schedule's decorators. */
export function hasNestSchedule(method: object): boolean {
  return Reflect.getMetadata(SCHEDULER_TYPE, method) !== undefined;
}

/**
 * Reads the schedule @nestjs/schedule will run `method` on; `undefined` when it has none.
 * Bad or unsupported metadata is `INVALID_ARGUMENT` naming `where`.
 *
 * - `@Cron(pattern, { timeZone | utcOffset })`: the latest fire time of the pattern at or before
 *   the tick, computed by croner in the same zone (the process's local zone when none is given, as
 *   the `cron` package does). The `cron` package never fires before the fire time on the
 *   process's own clock, so a timely tick maps to the fire time it was set for; a tick delayed by
 *   more than a whole period maps to the latest fire time that has passed. `@Cron(date)` (one
 *   instant): that instant.
 * - `@Interval(ms)`: the start of the `ms`-long slot of the Unix-epoch grid the tick falls in
 *   (`floor(now / ms) * ms`, as oncely's `every`). Replicas' intervals start at their own boot
 *   times, so each slot is run by the replica whose tick comes first in it.
 * - `@Timeout(ms)`: no fire time.
 */
export function nestScheduleOf(method: object, where: string): NestSchedule | undefined {
  const type: unknown = Reflect.getMetadata(SCHEDULER_TYPE, method);
  if (type === undefined) return undefined;
  if (type === CRON) return cronSchedule(Reflect.getMetadata(SCHEDULE_CRON_OPTIONS, method), where);
  if (type === INTERVAL) {
    const ms = (Reflect.getMetadata(SCHEDULE_INTERVAL_OPTIONS, method) as { timeout?: unknown } | undefined)
      ?.timeout;
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1) {
      throw invalidArgument(
        `@Once on ${where}: @Interval() needs a whole number of milliseconds >= 1; got ${String(ms)}`,
      );
    }
    return { kind: 'interval', describe: `@Interval(${ms})`, fireTime: (now) => Math.floor(now / ms) * ms };
  }
  if (type === TIMEOUT) return { kind: 'timeout', describe: '@Timeout()', fireTime: () => undefined };
  throw invalidArgument(
    `@Once on ${where}: unknown @nestjs/schedule scheduler type ${JSON.stringify(type)} (this oncely knows @nestjs/schedule 4 to 12)`,
  );
}

interface CronMetadata {
  cronTime?: unknown;
  timeZone?: unknown;
  utcOffset?: unknown;
}

function cronSchedule(metadata: CronMetadata | undefined, where: string): NestSchedule {
  const cronTime = metadata?.cronTime;
  if (cronTime instanceof Date || isDateTime(cronTime)) {
    const at = cronTime instanceof Date ? cronTime.getTime() : cronTime.toMillis();
    if (!Number.isFinite(at)) throw invalidArgument(`@Once on ${where}: @Cron() was given an invalid date`);
    return { kind: 'cron', describe: `@Cron(${new Date(at).toISOString()})`, fireTime: () => at };
  }
  if (typeof cronTime !== 'string' || cronTime.trim() === '') {
    throw invalidArgument(`@Once on ${where}: @Cron() needs a cron pattern, a Date or a Luxon DateTime`);
  }
  const describe = `@Cron(${JSON.stringify(cronTime)})`;
  const zone: { timezone?: string; utcOffset?: number } = {};
  if (metadata?.timeZone !== undefined && metadata.timeZone !== null)
    zone.timezone = validateTimezone(metadata.timeZone as string, `@Once on ${where}: ${describe} timeZone`);
  if (metadata?.utcOffset !== undefined && metadata.utcOffset !== null) {
    if (typeof metadata.utcOffset !== 'number' || !Number.isFinite(metadata.utcOffset))
      throw invalidArgument(`@Once on ${where}: ${describe} utcOffset must be a number of minutes`);
    zone.utcOffset = metadata.utcOffset;
  }
  let pattern: Cron;
  try {
    pattern = new Cron(cronTime, { ...zone, mode: '5-or-6-parts' });
  } catch (err) {
    throw invalidArgument(
      `@Once on ${where}: ${describe} is not a pattern croner reads: ${(err as Error).message}`,
    );
  }
  return {
    kind: 'cron',
    describe,
    fireTime(now) {
      // previousRuns is strictly before its reference: + 1 ms makes a tick exactly at a fire time map to it.
      const [latest] = pattern.previousRuns(1, new Date(now + 1));
      // A pattern with no past fire time never ticks (the `cron` package computes the same set).
      return latest ? latest.getTime() : now;
    },
  };
}

/** A Luxon `DateTime` (what `cron` accepts besides strings and Dates), recognised by shape. */
function isDateTime(value: unknown): value is { toMillis(): number } {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { toMillis?: unknown }).toMillis === 'function'
  );
}
