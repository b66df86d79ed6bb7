import { invalidArgument, OncelyError } from '../../core/errors.js';
import { checkOptionNames } from '../../core/options.js';
import { bounded, boundedBy, recordedBounds, unbounded } from '../../schedule/bounds.js';
import { isExcluded } from '../../schedule/exclude.js';
import { nextFireTimes } from '../../schedule/fire-times.js';
import { type CompiledJitter, compileJitter, scheduledAt, startOfFire } from '../../schedule/jitter.js';
import { compileShared } from '../../schedule/shared-triggers.js';
import { type CompiledTrigger, compileTrigger, type Trigger } from '../../schedule/trigger.js';
import type { Store } from '../../store/types.js';
import { runsLeftOf } from '../control/runs-left.js';
import { type StoredScheduleRecord, validateScheduleId } from '../control/schedule-input.js';
import { validateJobName } from '../job-options.js';
import { keys } from '../keys.js';
import { type NextExclude, nextExclude } from './next-exclude.js';

/**
 * Read side of issue 32 item 9: the starts that will really happen, for `scheduler.next(job)`,
 * `scheduler.schedules.next(id)`, `oncely next` and the dashboard. Reads records only (the job
 * record the nodes write, the stored schedule, the pause, the high-water mark, the due entry);
 * computes each start with the same pure function the scheduler claims by (schedule/jitter.ts).
 */

/** What `scheduler.next(job, options)` and `scheduler.schedules.next(id, options)` accept. */
export interface NextOptions {
  /** How many starts to return: a whole number from 1 to 1,000; default 5. */
  count?: number;
}

/** The most starts one `next()` call returns. */
export const MAX_NEXT_COUNT = 1000;
/** `count` when none is given (the dashboard and `oncely next` show five). */
export const DEFAULT_NEXT_COUNT = 5;
/** The misfire threshold of a job whose record does not say (the `define()` default). */
const DEFAULT_THRESHOLD_MS = 1000;

/** The part of the job record (control/feed.ts `registerJobs`) this reads. */
interface JobRecordView {
  trigger: Trigger | null;
  /** When a node last recorded the definition (store time). */
  updatedAt: number;
  options: { misfireThresholdMs?: number; jitter?: CompiledJitter; exclude?: unknown };
}

/**
 * One trigger's plan: everything that decides which of its fire times will start, and when.
 * Built from the records by {@link nextOfJob} / {@link nextOfSchedule}, walked by {@link starts}.
 */
interface Plan {
  job: string;
  /** `undefined` for the job's own trigger. */
  scheduleId: string | undefined;
  trigger: CompiledTrigger;
  jitter: CompiledJitter | undefined;
  /** The job is paused (cluster-wide): nothing starts until it is resumed, so nothing is listed. */
  paused: boolean;
  /**
   * The trigger's position: every fire time strictly after it will run (the due stage claims
   * them in order). Before the store's now only where the records say so (see the callers).
   */
  after: number;
  /** Only starts at or after this (store time): earlier ones are missed, left to the misfire policy. */
  notBefore: number;
  /** The trigger's exclusions and the calendars they name (next-exclude.ts), if any. */
  exclude?: NextExclude | undefined;
  /** (A stored schedule with maxRuns, control/runs-left.ts) at most this many more start. */
  remaining?: number;
}

/**
 * Whether the fire time `fireTime` of `plan` will run at all. THE SEAM: today every fire time
 * does (a paused job is handled as a whole in {@link starts}). `startAt`/`endAt`, `maxRuns`
 * (remaining runs: stop after that many accepted), `exclude` (cron, ranges, calendars) and a
 * stored schedule's own pause (issue 32 items 2, 3, 6) plug in here — the plan carries what they
 * need, read by nextOfJob / nextOfSchedule — so that `next()` applies them as the due stage does.
 */
function admits(plan: Plan, fireTime: number): boolean {
  // Excluded fire times (schedule/exclude.ts) are recorded skipped, never run.
  if (plan.exclude && isExcluded(plan.exclude.exclude, fireTime, plan.exclude.calendars)) return false;
  return true;
}

/**
 * The first `count` starts of `plan` (epoch ms, ascending): each admitted fire time after
 * `plan.after` plus its jitter offset (capped at the gap to the following fire time, as the due
 * stage does), from `plan.notBefore` on.
 */
function starts(plan: Plan, wanted: number): number[] {
  if (plan.paused) return [];
  // startAt/endAt are in the trigger (schedule/bounds.ts); maxRuns caps how many start.
  const count = Math.min(wanted, plan.remaining ?? wanted);
  const out: number[] = [];
  // Fire times are computed in chunks; a chunk's last one is only used as the cap of the one before.
  let after = plan.after;
  for (let rounds = 0; out.length < count && rounds < 100; rounds++) {
    const chunk = nextFireTimes(plan.trigger, after, count - out.length + 2);
    if (chunk.length === 0) break;
    for (let i = 0; i < chunk.length && out.length < count; i++) {
      const fireTime = chunk[i]!;
      const following = i + 1 < chunk.length ? chunk[i + 1] : nextFireTimes(plan.trigger, fireTime, 1)[0];
      const start = scheduledAt(plan.jitter, plan.job, plan.scheduleId, fireTime, following);
      after = fireTime;
      if (start < plan.notBefore) continue;
      if (admits(plan, fireTime)) out.push(start);
    }
  }
  return out;
}

function checkCount(options: NextOptions, what: string): number {
  checkOptionNames(what, options, ['count']);
  const count = options.count ?? DEFAULT_NEXT_COUNT;
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_NEXT_COUNT)
    throw invalidArgument(
      `${what}: count must be a whole number from 1 to ${MAX_NEXT_COUNT}; got ${JSON.stringify(count)}`,
    );
  return count;
}

function jobRecordOf(value: string | null): JobRecordView | undefined {
  return value === null ? undefined : (JSON.parse(value) as JobRecordView);
}

/** How far back a start may be and still be on time: the job's misfire threshold. */
function thresholdOf(record: JobRecordView | undefined): number {
  const t = record?.options.misfireThresholdMs;
  return typeof t === 'number' && t >= 0 ? t : DEFAULT_THRESHOLD_MS;
}

/**
 * The next `count` starts of the job's own trigger that will really happen, ascending: fire time
 * plus jitter offset, none while the job is paused, none without a trigger of its own. The
 * trigger's position is its high-water mark (the latest fire time a node started or skipped;
 * before any, when a node last recorded the job: a node starting counts from its start): every
 * fire time after it runs. One whose start is past by no more than the misfire threshold is due
 * and not yet claimed, and listed; one past by more is a misfire, left to the misfire policy.
 * Reads the job record the nodes write: needs no `define()` in this process.
 * `NOT_FOUND` if no node has recorded the job; `INVALID_ARGUMENT` for a bad name or count.
 */
export async function nextOfJob(store: Store, job: string, options: NextOptions = {}): Promise<Date[]> {
  const count = checkCount(options, 'next');
  validateJobName(job);
  const [value, pause, hwm, now] = await Promise.all([
    store.get(keys.job(job)),
    store.get(keys.pause(job)),
    store.get(keys.highWater(job, undefined)),
    store.now(),
  ]);
  const record = jobRecordOf(value);
  if (!record)
    throw new OncelyError(
      'NOT_FOUND',
      `next: no job named ${JSON.stringify(job)} is recorded in this store; check the name, or define it on a node (scheduler.define) and start that node`,
    );
  if (record.trigger === null) return [];
  // startAt/endAt as the nodes recorded them (schedule/bounds.ts): no fire time outside them.
  const trigger = bounded(
    compileTrigger(record.trigger, `job ${JSON.stringify(job)}`),
    recordedBounds(record.options as Record<string, unknown>),
  );
  const jitter = record.options.jitter;
  const threshold = thresholdOf(record);
  const handled = hwm === null ? record.updatedAt : Number(hwm);
  // The earliest fire time whose start can still be on time: max jitter before that start.
  const earliest = now - threshold - (jitter?.maxMs ?? 0);
  const own = unbounded(trigger);
  const exclude = await nextExclude(
    store,
    record.options.exclude,
    own.kind === 'cron' ? own.timezone : undefined,
    `job ${JSON.stringify(job)}`,
  );
  return starts(
    {
      job,
      scheduleId: undefined,
      trigger,
      jitter,
      paused: pause !== null,
      after: Math.max(earliest - 1, handled),
      notBefore: now - threshold,
      exclude,
    },
    count,
  ).map((t) => new Date(t));
}

/**
 * The next `count` starts of a stored schedule that will really happen, ascending: fire time plus
 * the schedule's jitter offset, none while it or its job is paused. Every fire time after the store's
 * now runs (the schedule's due entry is at one before it, or at it). One at or before now is
 * listed only where the schedule's due entry (of its current version) is at it, or at one listed
 * before it: due and not yet claimed (a claim moves the entry on; an upsert puts it at the first
 * fire time after the upsert), and then only if its start is past by no more than the job's
 * misfire threshold (a later one is a misfire, left to the misfire policy).
 * `NOT_FOUND` if there is no schedule `id`; `INVALID_ARGUMENT` for a bad id or count.
 */
export async function nextOfSchedule(store: Store, id: string, options: NextOptions = {}): Promise<Date[]> {
  const count = checkCount(options, 'schedules.next');
  validateScheduleId(id);
  const [value, now] = await Promise.all([store.get(keys.schedule(id)), store.now()]);
  if (value === null)
    throw new OncelyError(
      'NOT_FOUND',
      `schedules.next: no stored schedule has the id ${JSON.stringify(id)}; check the id (schedules.list shows them)`,
    );
  const schedule = JSON.parse(value) as StoredScheduleRecord;
  // Paused: the job (`pause(job)`) or the schedule itself (`schedules.pause(id)`).
  const [jobValue, jobPause, ownPause] = await store.getMany([
    keys.job(schedule.job),
    keys.pause(schedule.job),
    keys.schedulePause(id),
  ]);
  const pause = jobPause ?? ownPause ?? null;
  const { job, v, jitter: j, exclude: x } = schedule;
  const what = `schedule ${JSON.stringify(id)}`;
  const trigger = boundedBy(compileShared(schedule, what), schedule, what);
  const remaining =
    schedule.maxRuns === undefined ? undefined : await runsLeftOf(store, id, v, schedule.maxRuns);
  const jitter = j === undefined ? undefined : compileJitter(j, undefined, what);
  const threshold = thresholdOf(jobRecordOf(jobValue ?? null));
  const notBefore = now - threshold;
  // Fire times at or before now whose start can still be on time (at most max jitter before
  // it): few (the window is threshold + max jitter). One read finds which has the due entry.
  const past: { fireTime: number; key: string }[] = [];
  const windowStart = notBefore - (jitter?.maxMs ?? 0) - 1;
  for (
    let f = nextFireTimes(trigger, windowStart, 1)[0];
    f !== undefined && f <= now && past.length < MAX_NEXT_COUNT;
    f = nextFireTimes(trigger, f, 1)[0]
  ) {
    const at = startOfFire(jitter, trigger, job, id, f);
    past.push({ fireTime: f, key: keys.dueEntry(f, id, v, at) });
  }
  let after = past.at(-1)?.fireTime ?? now;
  if (past.length > 0 && pause === null) {
    const found = await store.getMany(past.map((p) => p.key));
    const first = found.findIndex((x) => x !== null && x !== undefined);
    if (first >= 0) after = first === 0 ? windowStart : past[first - 1]!.fireTime;
  }
  const plain = unbounded(trigger);
  const exclude = await nextExclude(store, x, plain.kind === 'cron' ? plain.timezone : undefined, what);
  return starts(
    {
      job,
      scheduleId: id,
      trigger,
      jitter,
      paused: pause !== null,
      after,
      notBefore,
      exclude,
      ...(remaining !== undefined && { remaining }),
    },
    count,
  ).map((t) => new Date(t));
}
