import { invalidArgument } from '../core/errors.js';
import { type CompiledTrigger, MAX_AT_MS, type PlainTrigger, toEpochMs } from './trigger.js';

/**
 * Start/end dates and a run limit of a trigger (issue 32 item 2), as `define()` and
 * `schedules.upsert()` take them: no fire time before `startAt` or after `endAt` (both
 * inclusive, as croner's `startAt`/`stopAt`), and the trigger ends once `maxRuns` of its
 * occurrences have started, fleet-wide (docs/bounds.md).
 *
 * @example
 * scheduler.define('trial-reminder', { cron: '0 9 * * *', startAt: '2027-01-01T00:00:00Z', endAt: '2027-01-31T23:59:59Z' }, remind);
 * await scheduler.schedules.upsert({ id: 'onboarding:42', job: 'onboarding', every: '1d', maxRuns: 7 });
 */
export interface TriggerBounds {
  /** No fire time before this instant (inclusive): a `Date`, an ISO-8601 string or epoch ms. */
  startAt?: Date | string | number;
  /** No fire time after this instant (inclusive); after `startAt`. */
  endAt?: Date | string | number;
  /** The trigger ends after this many occurrences started (1 to 1,000,000,000). */
  maxRuns?: number;
}

/** The largest `maxRuns`: a billion (an every-second trigger runs for 31 years). */
export const MAX_RUNS = 1_000_000_000;

/** Validated bounds: epoch ms, `undefined` where not given. */
export interface CompiledBounds {
  startAt: number | undefined;
  endAt: number | undefined;
  maxRuns: number | undefined;
}

/**
 * Validates `startAt`, `endAt` and `maxRuns` (`INVALID_ARGUMENT` naming the field: `what` names
 * the job or schedule). `undefined` when none is given: the trigger is used as it is, at no cost.
 */
export function compileBounds(
  input: { startAt?: unknown; endAt?: unknown; maxRuns?: unknown },
  what: string,
): CompiledBounds | undefined {
  const { startAt, endAt, maxRuns } = input;
  if (startAt === undefined && endAt === undefined && maxRuns === undefined) return undefined;
  const start = startAt === undefined ? undefined : toEpochMs(startAt as Date, `${what}: startAt`);
  const end = endAt === undefined ? undefined : toEpochMs(endAt as Date, `${what}: endAt`);
  if (start !== undefined && end !== undefined && !(end > start))
    throw invalidArgument(
      `${what}: endAt (${new Date(end).toISOString()}) must be after startAt (${new Date(start).toISOString()})`,
    );
  if (
    maxRuns !== undefined &&
    (typeof maxRuns !== 'number' || !Number.isInteger(maxRuns) || maxRuns < 1 || maxRuns > MAX_RUNS)
  )
    throw invalidArgument(
      `${what}: maxRuns must be a whole number from 1 to ${MAX_RUNS}; got ${JSON.stringify(maxRuns)}`,
    );
  return { startAt: start, endAt: end, maxRuns };
}

/**
 * `trigger` limited to fire times in `[startAt, endAt]`; the trigger itself without either (no
 * wrapper, no cost). Every fire-time function (fire-times.ts, fire-span.ts, latest-fire-time.ts)
 * honours the bounds, so the due stage, misfire maths and `next()` need nothing of their own.
 */
export function bounded(trigger: CompiledTrigger, bounds: CompiledBounds | undefined): CompiledTrigger {
  if (bounds === undefined || (bounds.startAt === undefined && bounds.endAt === undefined)) return trigger;
  const inner: PlainTrigger = trigger.kind === 'bounded' ? trigger.inner : trigger;
  return { kind: 'bounded', inner, startAt: bounds.startAt ?? 0, endAt: bounds.endAt ?? MAX_AT_MS };
}

/** The trigger without its bounds (its cron, every or at). */
export function unbounded(trigger: CompiledTrigger): PlainTrigger {
  return trigger.kind === 'bounded' ? trigger.inner : trigger;
}

/**
 * The startAt/endAt a job record's options hold (control/feed.ts writes them as epoch ms, only
 * when set), for readers that bound the recorded trigger (`next()`, the job list).
 */
export function recordedBounds(options: Record<string, unknown> | undefined): CompiledBounds | undefined {
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const startAt = num(options?.['startAt']);
  const endAt = num(options?.['endAt']);
  return startAt === undefined && endAt === undefined ? undefined : { startAt, endAt, maxRuns: undefined };
}

/**
 * `trigger` bounded by the startAt/endAt a stored schedule record holds (as given to upsert);
 * the trigger itself when it holds neither (nothing parsed).
 */
export function boundedBy(
  trigger: CompiledTrigger,
  record: { startAt?: unknown; endAt?: unknown },
  what: string,
): CompiledTrigger {
  if (record.startAt === undefined && record.endAt === undefined) return trigger;
  return bounded(trigger, compileBounds({ startAt: record.startAt, endAt: record.endAt }, what));
}
