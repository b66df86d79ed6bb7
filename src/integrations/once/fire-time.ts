import { invalidArgument } from '../../core/errors.js';
import { latestFireTime } from '../../schedule/latest-fire-time.js';
import type { CompiledTrigger } from '../../schedule/trigger.js';

/**
 * Which fire time a tick stands for. A tick arrives late (a busy event loop, a GC pause) and the
 * instant it arrived is different on every instance, so it is never the key itself: it is snapped
 * to the latest fire time at or before the moment the cron library meant to fire.
 *
 * Decisions, by what the library passes to the callback:
 * - **node-cron 4** passes a context whose `date` is the scheduled slot itself (exact, whole
 *   second, however late the callback runs; `triggeredAt` is the real moment). The slot is the
 *   fire time; a schedule in the options, if given, snaps it (a no-op when they agree).
 *   `task.execute()` passes the moment of the call instead: that call is then its own occurrence.
 * - **croner** passes its `Cron` job. `job.currentRun()` is the moment croner fired (not the fire
 *   time: croner does not expose that), so it is snapped with the job's own schedule
 *   (`previousRuns`, honouring its time zone and options) or with the options' schedule if given.
 * - **setInterval**, **node-cron 3** (it passes a Date shifted into the task's time zone, so it
 *   is not an instant to trust) and anything else: the local clock now, snapped with the options'
 *   schedule, which is then required.
 *
 * Why the **local** clock and not the store's: each instance's cron library fires by its own
 * clock, so an instance whose clock is 2 s behind fires the 10:00:00 tick at 10:00:02 (store
 * time) with its local time reading 10:00:00 — snapping the local time names the fire time that
 * tick was for, on every instance alike. The store clock then judges only whether the claim came
 * too late (tolerance) or too early (the run waits for the fire time). A tick later than one whole
 * interval (its loop blocked that long) is taken for the latest fire time, which is what croner
 * and node-cron do with such a tick too.
 */
export interface DerivedFireTime {
  fireTime: number;
  /** What the tick was: node-cron 4's context, a croner job, or anything else (the local clock). */
  from: 'node-cron' | 'croner' | 'clock';
}

/** Croner's `Cron` job, as far as it is read here. */
interface CronerJob {
  currentRun(): Date | null;
  previousRuns(n: number, reference?: Date): Date[];
}

/** node-cron 4's `TaskContext`, as far as it is read here. */
interface NodeCronContext {
  date: Date;
  triggeredAt: Date;
}

function isCronerJob(tick: unknown): tick is CronerJob {
  const t = tick as Partial<CronerJob> | null;
  return (
    typeof t === 'object' &&
    t !== null &&
    typeof t.currentRun === 'function' &&
    typeof t.previousRuns === 'function'
  );
}

function isNodeCronContext(tick: unknown): tick is NodeCronContext {
  const t = tick as Partial<NodeCronContext> | null;
  return typeof t === 'object' && t !== null && t.date instanceof Date && t.triggeredAt instanceof Date;
}

function validTime(ms: number | undefined): number | undefined {
  return ms !== undefined && Number.isFinite(ms) ? ms : undefined;
}

/**
 * The fire time of one tick (see the module comment), or `undefined` when the schedule has none at
 * or before it yet. Throws `OncelyError` (`INVALID_ARGUMENT`) when nothing says what the schedule
 * is: a bare tick time cannot be keyed safely (two instances' ticks differ by milliseconds).
 */
export function deriveFireTime(
  trigger: CompiledTrigger | undefined,
  tick: unknown,
  localNow: number,
  name: string,
): DerivedFireTime | undefined {
  if (isNodeCronContext(tick)) {
    const slot = validTime(tick.date.getTime());
    if (slot === undefined)
      throw invalidArgument(`once(${JSON.stringify(name)}): node-cron passed an invalid date`);
    const fireTime = trigger ? latestFireTime(trigger, slot) : slot;
    return fireTime === undefined ? undefined : { fireTime, from: 'node-cron' };
  }
  if (isCronerJob(tick)) {
    const at = validTime(tick.currentRun()?.getTime()) ?? localNow;
    // previousRuns is strictly before its reference: `at + 1` includes a fire time exactly at `at`.
    const fireTime = trigger
      ? latestFireTime(trigger, at)
      : validTime(tick.previousRuns(1, new Date(at + 1))[0]?.getTime());
    return fireTime === undefined ? undefined : { fireTime, from: 'croner' };
  }
  if (!trigger) {
    throw invalidArgument(
      `once(${JSON.stringify(name)}): this tick carries no fire time (setInterval, node-cron 3, a direct call): give the schedule the ticks follow in the options, { every: '…' } or { cron: '…', timezone? }`,
    );
  }
  const fireTime = latestFireTime(trigger, localNow);
  return fireTime === undefined ? undefined : { fireTime, from: 'clock' };
}
