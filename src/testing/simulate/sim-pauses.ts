/**
 * Pauses in a simulation (`SimJob.pauses`): checked before anything runs, and read by the checker
 * as the public history checker reads `CheckInput.pauses` — by its own rule (history-skips.ts
 * `pausesOf`), not a second one. The calls themselves are made by controls.ts.
 */
import { invalidArgument } from '../../core/errors.js';
import { didYouMean } from '../../core/options.js';
import { validateNote } from '../../scheduler/control/audit.js';
import type { CheckInput } from '../history-model.js';
import { pausesOf } from '../history-skips.js';
import type { CheckedJob } from './checker-types.js';
import type { SimJob } from './options.js';
import { EPOCH } from './sim-store.js';
import type { ScheduleVersion } from './stored.js';

const FIELDS = ['scheduleId', 'at', 'resumeAt', 'note'];

/** One pause of a simulation, validated (virtual ms). */
export interface PausePlan {
  job: string;
  /** Absent: the whole job (`scheduler.pause(job)`). */
  scheduleId?: string;
  at: number;
  /** Absent: never resumed. */
  resumeAt?: number;
  note?: string;
}

/** What a pause is of, for the trace and the messages. */
export function pauseTarget(p: { job: string; scheduleId?: string | undefined }): string {
  return p.scheduleId === undefined
    ? `job ${JSON.stringify(p.job)}`
    : `schedule ${JSON.stringify(p.scheduleId)}`;
}

/**
 * Validates the jobs' `pauses`; bad input throws `INVALID_ARGUMENT` naming the job, the entry and
 * what to fix. A paused stored schedule must be in the store at the pause and stay there until
 * its resume (a removal ends a pause, and the resume would find no schedule); pauses of one target
 * may not overlap (a second pause of a paused target only replaces its note).
 */
export function checkPauses(
  jobs: readonly SimJob[],
  versions: readonly ScheduleVersion[],
  durationMs: number,
): PausePlan[] {
  const plans: PausePlan[] = [];
  for (const job of jobs) {
    if (job.pauses === undefined) continue;
    if (!Array.isArray(job.pauses))
      throw invalidArgument(`simulate: job ${JSON.stringify(job.name)} pauses must be an array`);
    const mine: { plan: PausePlan; where: string }[] = [];
    for (const [i, raw] of job.pauses.entries()) {
      const where = `simulate: job ${JSON.stringify(job.name)} pauses[${i}]`;
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
        throw invalidArgument(`${where} must be an object { scheduleId?, at, resumeAt?, note? }`);
      const unknown = Object.keys(raw).find((k) => !FIELDS.includes(k));
      if (unknown !== undefined)
        throw invalidArgument(
          `${where}: unknown field ${JSON.stringify(unknown)}${didYouMean(unknown, FIELDS)}; allowed: ${FIELDS.join(', ')}${unknown === 'job' ? ' (the pause is of the job it is listed under)' : ''}`,
        );
      const { scheduleId, at, resumeAt, note } = raw;
      if (!(typeof at === 'number' && at >= 0 && at <= durationMs))
        throw invalidArgument(`${where}: at must be virtual ms from 0 to durationMs (${durationMs})`);
      if (
        resumeAt !== undefined &&
        !(typeof resumeAt === 'number' && resumeAt > at && resumeAt <= durationMs)
      )
        throw invalidArgument(
          `${where}: resumeAt must be virtual ms after at (${at}) and at most durationMs (${durationMs}); leave it out for a pause that is never resumed`,
        );
      if (note !== undefined) validateNote(note, where);
      if (scheduleId !== undefined) checkPausedSchedule(job.name, scheduleId, at, resumeAt, versions, where);
      const plan: PausePlan = {
        job: job.name,
        ...(scheduleId !== undefined && { scheduleId }),
        at,
        ...(resumeAt !== undefined && { resumeAt }),
        ...(note !== undefined && { note }),
      };
      mine.push({ plan, where });
      plans.push(plan);
    }
    // One target's pauses one after another: pausing a paused target keeps its first start.
    const byTarget = new Map<string, { plan: PausePlan; where: string; index: number }[]>();
    mine.forEach((m, index) => {
      const key = m.plan.scheduleId ?? '';
      byTarget.set(key, [...(byTarget.get(key) ?? []), { ...m, index }]);
    });
    for (const list of byTarget.values()) {
      list.sort((a, b) => a.plan.at - b.plan.at);
      for (let k = 1; k < list.length; k++) {
        const a = list[k - 1]!;
        const b = list[k]!;
        if (a.plan.resumeAt === undefined || b.plan.at < a.plan.resumeAt)
          throw invalidArgument(
            `${b.where}: ${pauseTarget(b.plan)} is paused already at ${b.plan.at} (pauses[${a.index}] from ${a.plan.at}${a.plan.resumeAt === undefined ? ', never resumed' : ` until ${a.plan.resumeAt}`}); pause it again at or after that pause's resumeAt`,
          );
      }
    }
  }
  return plans;
}

function checkPausedSchedule(
  job: string,
  id: unknown,
  at: number,
  resumeAt: number | undefined,
  versions: readonly ScheduleVersion[],
  where: string,
): void {
  const mine = versions.filter((v) => v.job === job);
  const own = mine.filter((v) => v.input.id === id);
  if (typeof id !== 'string' || own.length === 0) {
    const ids = [...new Set(mine.map((v) => v.input.id))];
    throw invalidArgument(
      `${where}: scheduleId must be the id of one of job ${JSON.stringify(job)}'s schedules (${
        ids.length === 0
          ? 'it lists none'
          : ids
              .slice(0, 5)
              .map((x) => JSON.stringify(x))
              .join(', ')
      }${ids.length > 5 ? ', …' : ''}); got ${JSON.stringify(id)}`,
    );
  }
  if (!own.some((v) => v.from <= at && at < v.to))
    throw invalidArgument(
      `${where}: schedule ${JSON.stringify(id)} is not in the store at ${at} (its upsertAt/removeAt); pause it while it is`,
    );
  const removal = own.find((v) => v.removed && v.to > at && v.to <= (resumeAt ?? Number.POSITIVE_INFINITY));
  if (removal)
    throw invalidArgument(
      `${where}: schedule ${JSON.stringify(id)} is removed at ${removal.to} while paused (a removal ends the pause, and the resume would find no schedule); resume it before its removeAt`,
    );
}

/** The pauses as the public history checker reads them (`CheckInput.pauses`: store ms). */
function asRecords(plans: readonly PausePlan[], job: string): NonNullable<CheckInput['pauses']>[number][] {
  return plans
    .filter((p) => p.job === job)
    .map((p) => ({
      job,
      ...(p.scheduleId !== undefined && { scheduleId: p.scheduleId }),
      from: EPOCH + p.at,
      ...(p.resumeAt !== undefined && { to: EPOCH + p.resumeAt }),
    }));
}

/**
 * What the checker reads of one job's pauses (see `CheckedJob.paused` and `pausedToEnd`), judged
 * by the public checker's rule: a fire time from the misfire threshold before a pause to that
 * much and a few seconds after its resume (the `paused` span runs to the first read of the
 * trigger after the resume). The store clock of a simulation is one clock: no tolerance.
 * `windowEnd`: virtual ms at which the checked window ends.
 */
export function pauseJudges(
  plans: readonly PausePlan[],
  job: string,
  thresholdMs: number,
  windowEnd: number,
): Pick<CheckedJob, 'paused' | 'pausedToEnd'> {
  const records = asRecords(plans, job);
  if (records.length === 0) return {};
  const covers = pausesOf({ pauses: records }, 0);
  const open = records.filter((r) => r.to === undefined || r.to > EPOCH + windowEnd).map(({ to, ...r }) => r);
  const openCovers = pausesOf({ pauses: open }, 0);
  const occ = (scheduleId: string | undefined, fireTime: number) => ({
    job,
    ...(scheduleId !== undefined && { scheduleId }),
    fireTime,
  });
  return {
    paused: (scheduleId, fireTime) => covers(occ(scheduleId, fireTime), thresholdMs),
    ...(open.length > 0 && {
      pausedToEnd: (scheduleId, fireTime) => openCovers(occ(scheduleId, fireTime), thresholdMs),
    }),
  };
}

/** Whether a pause of `job` (or of its schedule `scheduleId`) is in force after virtual ms `end`. */
export function pausedAfter(
  plans: readonly PausePlan[],
  job: string,
  scheduleId: string | undefined,
  end: number,
): boolean {
  return plans.some(
    (p) =>
      p.job === job &&
      (p.scheduleId === undefined || p.scheduleId === scheduleId) &&
      (p.resumeAt === undefined || p.resumeAt > end),
  );
}
