/**
 * Backfills in a simulation (`SimJob.backfills`): checked before anything runs, and turned into
 * what the checker expects of each call (`CheckedBackfill`): the fire times the real `backfill()`
 * takes — its trigger's in [from, to) (the trigger as given: no exclusions, no startAt/endAt),
 * ending before the store's clock at the call minus the job's misfire threshold and jitter, whose
 * fire times are still the scheduler's own (control/backfill.ts). The calls themselves are made
 * by controls.ts.
 */
import { invalidArgument } from '../../core/errors.js';
import { didYouMean } from '../../core/options.js';
import { unbounded } from '../../schedule/bounds.js';
import { nextFireTimes } from '../../schedule/fire-times.js';
import { compileJitter } from '../../schedule/jitter.js';
import { type CompiledTrigger, toEpochMs } from '../../schedule/trigger.js';
import { MAX_BACKFILL_OCCURRENCES } from '../../scheduler/control/backfill.js';
import type { JobSpec } from '../../scheduler/job-options.js';
import type { CheckedBackfill } from './checker-types.js';
import { type SimJob, WARMUP_MS } from './options.js';
import { EPOCH } from './sim-store.js';
import type { ScheduleVersion } from './stored.js';

const FIELDS = ['scheduleId', 'from', 'to', 'at'];

/** One backfill call of a simulation, validated. */
export interface BackfillPlan {
  job: string;
  /** Absent: the job's own trigger. */
  scheduleId?: string;
  /** The range as given, store ms, [from, to). */
  from: number;
  to: number;
  /** Virtual ms of the call. */
  at: number;
  /** The fire times (store ms) the call covers, ascending. */
  fireTimes: number[];
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Validates the jobs' `backfills` (`specs`: the jobs' validated options, in order); bad input
 * throws `INVALID_ARGUMENT` naming the job, the entry and what to fix — what the real call would
 * refuse (from not before to, to after the store's clock, no trigger, too many occurrences), and
 * what the simulation cannot do (a call before the nodes recorded the job, a schedule that is not
 * in the store then).
 */
export function checkBackfills(
  jobs: readonly SimJob[],
  specs: readonly JobSpec[],
  versions: readonly ScheduleVersion[],
  durationMs: number,
): BackfillPlan[] {
  const plans: BackfillPlan[] = [];
  jobs.forEach((job, j) => {
    if (job.backfills === undefined) return;
    if (!Array.isArray(job.backfills))
      throw invalidArgument(`simulate: job ${JSON.stringify(job.name)} backfills must be an array`);
    const spec = specs[j]!;
    for (const [i, raw] of job.backfills.entries()) {
      const where = `simulate: job ${JSON.stringify(job.name)} backfills[${i}]`;
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
        throw invalidArgument(`${where} must be an object { scheduleId?, from, to, at }`);
      const unknown = Object.keys(raw).find((k) => !FIELDS.includes(k));
      if (unknown !== undefined)
        throw invalidArgument(
          `${where}: unknown field ${JSON.stringify(unknown)}${didYouMean(unknown, FIELDS)}; allowed: ${FIELDS.join(', ')}${unknown === 'job' ? ' (the backfill is of the job it is listed under)' : ''}`,
        );
      const { scheduleId, at } = raw;
      if (!(typeof at === 'number' && at >= WARMUP_MS && at <= durationMs))
        throw invalidArgument(
          `${where}: at must be virtual ms from ${WARMUP_MS} to durationMs (${durationMs}): the nodes record their jobs in the store as they start, and backfill() needs that record`,
        );
      for (const field of ['from', 'to'] as const)
        if (raw[field] === undefined)
          throw invalidArgument(
            `${where}: ${field} is required: a Date, an ISO-8601 string or epoch ms on the simulated store's clock (virtual 0 is ${EPOCH})`,
          );
      const from = toEpochMs(raw.from, `${where}: from`);
      const to = toEpochMs(raw.to, `${where}: to`);
      if (!(from < to))
        throw invalidArgument(
          `${where}: from (${iso(from)}) must be before to (${iso(to)}); the range is [from, to)`,
        );
      if (to > EPOCH + at)
        throw invalidArgument(
          `${where}: to (${iso(to)}) is after the store's clock at ${at} (${iso(EPOCH + at)}); backfill is for fire times that have passed (the simulated store's clock is ${EPOCH} + virtual ms)`,
        );
      let trigger: CompiledTrigger;
      let jitterMs = 0;
      if (scheduleId !== undefined) {
        const version = versions.find(
          (v) => v.job === job.name && v.input.id === scheduleId && v.from <= at && at < v.to,
        );
        if (!version)
          throw invalidArgument(
            `${where}: scheduleId must be one of job ${JSON.stringify(job.name)}'s schedules, in the store at ${at} (its upsertAt/removeAt); got ${JSON.stringify(scheduleId)}`,
          );
        trigger = unbounded(version.trigger);
        // The stored schedule's own jitter, as backfill() takes it (control/backfill.ts): a fire
        // time whose start may still be on time is the scheduler's (seed 76 of the jittered
        // pause-and-backfill setup expected 11 s, which the call, 14 − 1 − 2 s, rightly left).
        jitterMs = compileJitter(version.input.jitter, version.trigger, where)?.maxMs ?? 0;
      } else {
        if (spec.trigger === undefined)
          throw invalidArgument(
            `${where}: job ${JSON.stringify(job.name)} has no trigger of its own (no cron, every or at in its options); give scheduleId, one of its schedules`,
          );
        trigger = unbounded(spec.trigger);
        jitterMs = spec.jitter?.maxMs ?? 0;
      }
      const shards = spec.shards?.count ?? 1;
      const end = Math.min(to, EPOCH + at - spec.misfireThresholdMs - jitterMs);
      const limit = Math.floor(MAX_BACKFILL_OCCURRENCES / shards);
      const fireTimes = fireTimesIn(trigger, from, end, limit + 1);
      if (fireTimes.length > limit)
        throw invalidArgument(
          `${where}: [${iso(from)}, ${iso(to)}) holds more than ${MAX_BACKFILL_OCCURRENCES} occurrences (fire times${shards > 1 ? ` times ${shards} shards` : ''}), more than backfill() takes in one call: split the range`,
        );
      plans.push({
        job: job.name,
        ...(scheduleId !== undefined && { scheduleId }),
        from,
        to,
        at,
        fireTimes,
      });
    }
  });
  return plans;
}

/** The trigger's fire times in [from, end), at most `limit`. */
function fireTimesIn(trigger: CompiledTrigger, from: number, end: number, limit: number): number[] {
  const out: number[] = [];
  for (let after = from - 1; out.length < limit && after < end - 1; ) {
    const chunk = nextFireTimes(trigger, after, Math.min(1000, limit - out.length));
    for (const f of chunk) {
      if (f >= end) return out;
      out.push(f);
    }
    if (chunk.length === 0) break;
    after = chunk.at(-1)!;
  }
  return out;
}

/**
 * What the checker expects of one job's backfills. `judged(plan)`: whether the checker may ask
 * that each of its fire times ran by the end (see `CheckedBackfill.judged`).
 */
export function expectBackfills(
  plans: readonly BackfillPlan[],
  job: string,
  judged: (plan: BackfillPlan) => boolean,
): CheckedBackfill[] {
  return plans
    .filter((p) => p.job === job)
    .map((p) => ({
      ...(p.scheduleId !== undefined && { scheduleId: p.scheduleId }),
      at: p.at,
      from: p.from,
      to: p.to,
      fireTimes: p.fireTimes,
      judged: judged(p),
    }));
}
