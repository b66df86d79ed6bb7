import { type Duration, parseDuration } from '../core/duration.js';
import { invalidArgument } from '../core/errors.js';
import { FNV_OFFSET, fnv1a, mix32 } from '../core/hash.js';
import { unbounded } from './bounds.js';
import { fireSpan } from './fire-span.js';
import { nextFireTimes } from './fire-times.js';
import type { CompiledTrigger } from './trigger.js';

/**
 * How far after its nominal fire time each occurrence may start: a plain Duration (a stable offset
 * per schedule, Jenkins' `H`), or `{ max, per }` — `per: 'schedule'` (the default) the same offset
 * for every fire time of one schedule, `per: 'fire'` a fresh one per fire time. Offsets are in
 * `[0, max)`, computed alike on every node from (job, schedule id, fire time): never random.
 *
 * @example
 * scheduler.define('report', { cron: '0 9 * * *', jitter: '10m' }, send);          // same minute each day
 * await scheduler.schedules.upsert({ id: 'u42', job: 'report', cron: '0 9 * * *', jitter: { max: '10m', per: 'fire' } });
 */
export type Jitter =
  | Duration
  | {
      /** Offsets are in `[0, max)`: at most 7 days, and less than an `every` interval. */
      max: Duration;
      /** `'schedule'` (default): one stable offset per schedule; `'fire'`: a new one per fire time. */
      per?: 'schedule' | 'fire';
    };

/** A validated {@link Jitter}: `maxMs` > 0. */
export interface CompiledJitter {
  readonly maxMs: number;
  readonly per: 'schedule' | 'fire';
}

/**
 * The largest jitter: 7 days. An offset is a delay of real work; a longer one is surely a unit
 * mistake (and a weekly trigger's occurrences would pass each other).
 */
export const MAX_JITTER_MS = 7 * 86_400_000;

const PERS = ['schedule', 'fire'] as const;

/**
 * Validates a jitter option for a trigger. `undefined` or a zero max: no jitter (`undefined`).
 *
 * Where the trigger's shortest interval is known without searching (`every: N`), `max` must be
 * less than it: a larger one is refused (`INVALID_ARGUMENT`), since an offset as long as the
 * interval would start an occurrence after its successor's fire time. Where it is not (a cron
 * pattern's gaps vary: months, DST), each fire time's offset is capped at the gap to the following
 * fire time instead (see {@link jitterOffset}), as Temporal caps its schedules' jitter.
 */
export function compileJitter(
  value: unknown,
  trigger: CompiledTrigger | undefined,
  what: string,
): CompiledJitter | undefined {
  if (value === undefined) return undefined;
  const shape = `${what}: jitter must be a duration ('30s', '5m', ms) or { max: duration, per?: 'schedule' | 'fire' }`;
  let max: unknown;
  let per: unknown = 'schedule';
  if (typeof value === 'number' || typeof value === 'string') max = value;
  else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    const extra = Object.keys(o).find((k) => k !== 'max' && k !== 'per');
    if (extra !== undefined) throw invalidArgument(`${shape}; unknown field ${JSON.stringify(extra)}`);
    max = o['max'];
    if (o['per'] !== undefined) per = o['per'];
  } else throw invalidArgument(`${shape}; got ${JSON.stringify(value)}`);
  if (typeof max !== 'number' && typeof max !== 'string') throw invalidArgument(`${shape}; max is missing`);
  if (!(PERS as readonly unknown[]).includes(per))
    throw invalidArgument(`${what}: jitter per must be 'schedule' or 'fire'; got ${JSON.stringify(per)}`);
  const maxMs = parseDuration(max, `${what}: jitter`);
  if (maxMs > MAX_JITTER_MS)
    throw invalidArgument(`${what}: jitter must be at most 7 days (${MAX_JITTER_MS} ms); got ${maxMs} ms`);
  const plain = trigger && unbounded(trigger);
  if (plain?.kind === 'every' && maxMs >= plain.everyMs)
    throw invalidArgument(
      `${what}: jitter (${maxMs} ms) must be less than the interval every ${plain.everyMs} ms: an occurrence would start after the next one's fire time; use a smaller jitter`,
    );
  if (maxMs === 0) return undefined;
  return { maxMs, per: per as 'schedule' | 'fire' };
}

/**
 * The offset in ms, in `[0, min(maxMs, following − fireTime))`, at which the occurrence `fireTime`
 * of (job, schedule) starts. Pure and the same on every node: a hash of `job \0 scheduleId` (per
 * `schedule`) or `job \0 scheduleId \0 fireTime` (per `fire`, the fire time as decimal epoch ms)
 * — names and ids hold no control characters, so the text is unambiguous — scaled to the range.
 * The hash is 32-bit FNV-1a over the UTF-16 code units with murmur3's finaliser (every input bit
 * moves about half of the output bits); 2^32 steps cover 7 days at millisecond grain.
 * `following`: the trigger's next fire time after `fireTime`, if any (the cap, see
 * {@link compileJitter}). A job's own trigger has no schedule id (`undefined`, hashed as '').
 */
export function jitterOffset(
  jitter: CompiledJitter | undefined,
  job: string,
  scheduleId: string | undefined,
  fireTime: number,
  following?: number,
): number {
  if (jitter === undefined) return 0;
  const cap = following === undefined ? jitter.maxMs : Math.min(jitter.maxMs, following - fireTime);
  if (!(cap > 0)) return 0;
  let h = fnv1a(FNV_OFFSET, job);
  h = fnv1a(Math.imul(h ^ 0, 0x01000193), scheduleId ?? '');
  if (jitter.per === 'fire') h = fnv1a(Math.imul(h ^ 0, 0x01000193), String(fireTime));
  return Math.floor((mix32(h) / 2 ** 32) * cap);
}

/** `fireTime` plus its {@link jitterOffset}: when the occurrence is to start. */
export function scheduledAt(
  jitter: CompiledJitter | undefined,
  job: string,
  scheduleId: string | undefined,
  fireTime: number,
  following?: number,
): number {
  return fireTime + jitterOffset(jitter, job, scheduleId, fireTime, following);
}

/**
 * When fire time `fireTime` of `trigger` is to start: {@link scheduledAt} with the offset capped
 * at the gap to the trigger's following fire time (every node computes the same); the fire time
 * itself without jitter. Cron fire times are memoised per trigger (fire-times.ts), so a fan-out
 * of one trigger computes the following one once.
 */
export function startOfFire(
  jitter: CompiledJitter | undefined,
  trigger: CompiledTrigger,
  job: string,
  scheduleId: string | undefined,
  fireTime: number,
): number {
  if (jitter === undefined) return fireTime;
  return scheduledAt(jitter, job, scheduleId, fireTime, nextFireTimes(trigger, fireTime, 1)[0]);
}

/**
 * One past the latest fire time of `trigger` whose start is before `missedBefore`, given
 * `first`, one of them (its start `firstAt`): the exclusive bound of the missed nominal fire
 * times, exact. Below {@link missedNominal} all are missed. With a fresh offset per fire time,
 * that bound allows for the largest offset; but an offset is capped at the gap to the next fire
 * time, so a fire time's start is before the next fire time: every fire time before the latest
 * one under `missedBefore` is missed, and only that latest one is looked at (one span and one
 * offset, however long the jitter). Without it, after a pause a `run-once` job with a fresh
 * offset per fire time replayed two fire times: the latest below the nominal bound, then the
 * one after it.
 */
export function missedBound(
  jitter: CompiledJitter | undefined,
  trigger: CompiledTrigger,
  job: string,
  scheduleId: string | undefined,
  first: number,
  firstAt: number,
  missedBefore: number,
): number {
  const nominal = Math.max(first + 1, missedNominal(jitter, firstAt - first, missedBefore));
  if (jitter === undefined || jitter.per === 'schedule') return nominal;
  const last = fireSpan(trigger, nominal - 1, missedBefore, 1)?.tail.at(-1);
  if (last === undefined) return nominal;
  return startOfFire(jitter, trigger, job, scheduleId, last) < missedBefore ? last + 1 : last;
}

/**
 * The nominal fire times before which every fire time's start (fire time + offset) is before
 * `missedBefore`, given the offset of one of them (`offsetMs`): exact per `schedule` (every fire
 * time shares the offset, unless capped), and per `fire` the earliest it could be (`max`
 * earlier), so that a fire time whose own start is still ahead is never counted as missed — it is
 * judged on its own when the tick reaches it.
 */
export function missedNominal(
  jitter: CompiledJitter | undefined,
  offsetMs: number,
  missedBefore: number,
): number {
  if (jitter === undefined) return missedBefore;
  return missedBefore - (jitter.per === 'schedule' ? offsetMs : jitter.maxMs);
}
