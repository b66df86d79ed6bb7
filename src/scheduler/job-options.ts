import { type Duration, parseDuration, parsePositiveDuration } from '../core/duration.js';
import { invalidArgument } from '../core/errors.js';
import { didYouMean } from '../core/options.js';
import { bounded, type CompiledBounds, compileBounds } from '../schedule/bounds.js';
import { type CompiledExclude, compileExclude, cronZone, type Exclusion } from '../schedule/exclude.js';
import { type CompiledJitter, compileJitter, type Jitter } from '../schedule/jitter.js';
import { type CompiledTrigger, compileTrigger, requireFires, type Trigger } from '../schedule/trigger.js';
import { MAX_LEASE_MS, requireWellFormed } from '../store/validate.js';
import { esc } from './keys.js';
import { type FleetLimitSpec, fleetLimitsOf, type RateLimit } from './run/fleet-limit-spec.js';

/**
 * What `scheduler.define(name, options, handler)` accepts. At most one of `cron`, `every`, `at`;
 * with none, the job runs only from stored schedules and `scheduler.trigger()`. Durations are
 * milliseconds or strings (`'30s'`, `'5m'`, `'PT5M'`).
 *
 * @example
 * scheduler.define('sync', { every: '10s', overlap: 'skip', timeout: '2m', retries: 3 }, sync);
 */
export interface JobOptions {
  /** A cron pattern: 5 fields, or 6 with seconds first; `L`, `W`, `#` and names (croner syntax). */
  cron?: string;
  /** An interval: fires on multiples of it counted from the Unix epoch, so every node agrees. */
  every?: Duration;
  /** One fire time: a `Date`, an ISO-8601 string or epoch milliseconds. */
  at?: Date | string | number;
  /** IANA zone for `cron` (default UTC). */
  timezone?: string;
  /**
   * Start each fire time of this job's own trigger at an offset in `[0, max)` after it, the same
   * on every node (docs/jitter.md): a Duration (stable per job), or `{ max, per: 'fire' }` (a new
   * offset per fire time). Less than `every`'s interval; at most 7 days. Stored schedules take
   * their own `jitter`.
   */
  jitter?: Jitter;
  /**
   * No fire time of the job's own trigger before this instant (inclusive): a `Date`, an ISO-8601
   * string or epoch ms (docs/bounds.md).
   */
  startAt?: Date | string | number;
  /** No fire time of the job's own trigger after this instant (inclusive); after `startAt`. */
  endAt?: Date | string | number;
  /**
   * Not yet on `define()`: refused (`INVALID_ARGUMENT`). A stored schedule takes `maxRuns`
   * (`schedules.upsert`, docs/bounds.md).
   */
  maxRuns?: number;
  /**
   * Fire times of the job's own trigger not to run, each recorded skipped with reason `excluded`
   * (docs/calendars.md): `{ cron, timezone? }`, `{ from, to }` (to not included) or `{ calendar: id }`
   * (`scheduler.calendars.upsert`; `start()` checks that it exists); at most 100 entries.
   */
  exclude?: Exclusion[];
  /**
   * When the previous run of this job is still going anywhere in the fleet (default `skip`):
   * `skip` the fire time (recorded skipped), `queue` it (one buffered per gate: the latest; older
   * queued ones are recorded skipped, `superseded`), `queue-all` (every one queued, run after it
   * in fire-time order, none superseded), `replace` (the new fire time aborts the running run's
   * `ctx.signal`, an `OncelyError` with code `REPLACED`, and runs once that run has ended), or
   * `allow` runs side by side (docs/overlap.md).
   */
  overlap?: 'skip' | 'queue' | 'queue-all' | 'replace' | 'allow';
  /** What to do with occurrences no node claimed in time (default `run-once`). */
  misfire?: 'skip' | 'run-once' | 'catch-up';
  /** With `catch-up`: at most this many missed occurrences are replayed (default 100). */
  catchUpLimit?: number;
  /** An occurrence claimed later than this after its fire time counts as missed (default 1 s). */
  misfireThreshold?: Duration;
  /** Lease length of a run, renewed while it runs (default 30 s). */
  lockAtMostFor?: Duration;
  /** Keep the occurrence's lease at least this long. */
  lockAtLeastFor?: Duration;
  /** Abort the handler's signal and record `timed-out` after this long. */
  timeout?: Duration;
  /** Re-run a handler that threw, up to this many times (default 0). */
  retries?: number;
  /**
   * The least wait before a retry (default 1 s), doubled each time; a jitter of up to half of it
   * is added, never taken off.
   */
  retryDelay?: Duration;
  /** Re-run an occurrence whose node died mid-run (default true). */
  recover?: boolean;
  /** Split each occurrence into shards: a count, or one parameter per shard. */
  shards?: number | readonly string[];
  /**
   * At most this many runs of the job at once across the fleet (all its schedules and shards;
   * 1–100,000). What waits starts in fire-time order as runs end (docs/limits.md).
   */
  maxConcurrency?: number;
  /** At most `max` starts per `per` across the fleet, e.g. `{ max: 500, per: '1s' }` (docs/limits.md). */
  rateLimit?: RateLimit;
}

/** A validated job definition with every default filled in. */
export interface JobSpec {
  name: string;
  /** `undefined`: runs only from stored schedules and `trigger()`. */
  trigger: CompiledTrigger | undefined;
  /** The trigger as given (for the job registry and the dashboard). */
  triggerSource: Trigger | undefined;
  /** The own trigger's jitter (schedule/jitter.ts); `undefined`: none. */
  jitter: CompiledJitter | undefined;
  /** The own trigger's startAt/endAt (epoch ms; `trigger` is bounded by them), if given. */
  bounds: { startAt?: number; endAt?: number } | undefined;
  /** The own trigger's exclusions (schedule/exclude.ts); `undefined`: none (nothing to check per fire time). */
  exclude: CompiledExclude | undefined;
  overlap: 'skip' | 'queue' | 'queue-all' | 'replace' | 'allow';
  misfire: 'skip' | 'run-once' | 'catch-up';
  catchUpLimit: number;
  misfireThresholdMs: number;
  lockAtMostForMs: number;
  lockAtLeastForMs: number;
  timeoutMs: number | undefined;
  retries: number;
  retryDelayMs: number;
  recover: boolean;
  /** Shard count and one parameter per shard (`undefined` where none was given); `undefined` when not sharded. */
  shards: { count: number; params: (string | undefined)[] } | undefined;
  /** maxConcurrency and rateLimit (run/fleet-limits.ts); `undefined`: neither. */
  limits: FleetLimitSpec | undefined;
}

/** Longest job name: it becomes part of store keys (at most 512 characters) together with a schedule id and a fire time. */
export const MAX_JOB_NAME_LENGTH = 255;
const MAX_SHARDS = 1000;

const KNOWN = new Set([
  'cron',
  'every',
  'at',
  'timezone',
  'jitter',
  'startAt',
  'endAt',
  'maxRuns',
  'exclude',
  'overlap',
  'misfire',
  'catchUpLimit',
  'misfireThreshold',
  'lockAtMostFor',
  'lockAtLeastFor',
  'timeout',
  'retries',
  'retryDelay',
  'recover',
  'shards',
  'maxConcurrency',
  'rateLimit',
]);

export function validateJobName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '')
    throw invalidArgument('job name must be a non-empty string');
  // Counted as stored: `|` and `%` take three characters each in store keys (keys.ts).
  const stored = esc(name).length;
  if (stored > MAX_JOB_NAME_LENGTH) {
    throw invalidArgument(
      `job name is ${stored} characters long as stored ('|' and '%' count 3); at most ${MAX_JOB_NAME_LENGTH} are allowed`,
    );
  }
  requireWellFormed(name, 'job name');
  if (/\p{Cc}/u.test(name))
    throw invalidArgument(`job name ${JSON.stringify(name)} must not contain control characters`);
  return name;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], fallback: T, what: string): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidArgument(
      `${what} must be one of ${allowed.map((a) => `'${a}'`).join(', ')}; got ${JSON.stringify(value)}`,
    );
  }
  return value as T;
}

function wholeNumber(value: unknown, min: number, max: number, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidArgument(
      `${what} must be a whole number from ${min} to ${max}; got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

function shardsOf(value: unknown, what: string): JobSpec['shards'] {
  if (value === undefined) return undefined;
  if (typeof value === 'number') {
    const count = wholeNumber(value, 1, MAX_SHARDS, 1, what);
    return { count, params: Array.from({ length: count }, () => undefined) };
  }
  if (
    Array.isArray(value) &&
    value.length > 0 &&
    value.length <= MAX_SHARDS &&
    value.every((p) => typeof p === 'string')
  ) {
    return { count: value.length, params: [...value] };
  }
  throw invalidArgument(
    `${what} must be a shard count (1-${MAX_SHARDS}) or a non-empty list of shard parameters (strings)`,
  );
}

/** The job's startAt/endAt (schedule/bounds.ts); maxRuns is refused on define() for now. */
function boundsOf(
  o: JobOptions,
  hasTrigger: boolean,
  job: string,
): { given: CompiledBounds | undefined; bounds: JobSpec['bounds'] } {
  const what = `job ${JSON.stringify(job)}`;
  const given = compileBounds(o, what);
  if (given === undefined) return { given, bounds: undefined };
  if (!hasTrigger) {
    const field = o.startAt !== undefined ? 'startAt' : o.endAt !== undefined ? 'endAt' : 'maxRuns';
    throw invalidArgument(
      `${what}: ${field} needs the job's own trigger (cron, every or at); a stored schedule takes its own`,
    );
  }
  if (given.maxRuns !== undefined)
    throw invalidArgument(
      `${what}: maxRuns is not supported on define() yet; give it to a stored schedule (schedules.upsert({ …, maxRuns })), or bound the trigger with startAt/endAt`,
    );
  const bounds = {
    ...(given.startAt !== undefined && { startAt: given.startAt }),
    ...(given.endAt !== undefined && { endAt: given.endAt }),
  };
  return { given, bounds };
}

/**
 * Validates a job definition once, at `define`: every error is an `INVALID_ARGUMENT` whose message
 * names the job and the field, so a bad cron or time zone never surfaces at the first fire.
 */
export function jobSpec(name: unknown, options: JobOptions = {}, store?: { pages: boolean }): JobSpec {
  const job = validateJobName(name);
  const at = (field: string) => `job ${JSON.stringify(job)}: ${field}`;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw invalidArgument(`job ${JSON.stringify(job)}: options must be an object`);
  }
  for (const field of Object.keys(options)) {
    if (!KNOWN.has(field)) {
      throw invalidArgument(
        `${at(field)} is not a job option${didYouMean(field, [...KNOWN])}; known: ${[...KNOWN].join(', ')}`,
      );
    }
  }
  const o = options;
  let trigger: CompiledTrigger | undefined;
  let triggerSource: Trigger | undefined;
  const given = Object.entries({ cron: o.cron, every: o.every, at: o.at, timezone: o.timezone }).filter(
    ([, v]) => v !== undefined,
  );
  if (given.length > 0) {
    triggerSource = Object.fromEntries(given) as Trigger;
    trigger = requireFires(
      compileTrigger(triggerSource, `job ${JSON.stringify(job)}`),
      `job ${JSON.stringify(job)}`,
    );
  }
  const lockAtMostForMs = parsePositiveDuration(o.lockAtMostFor ?? '30s', at('lockAtMostFor'));
  // A longer lease is refused by every store: accepted here, each claim would fail at every poll.
  if (lockAtMostForMs > MAX_LEASE_MS)
    throw invalidArgument(
      `${at('lockAtMostFor')} must be at most 100 years (${MAX_LEASE_MS} ms); got ${lockAtMostForMs} ms`,
    );
  const lockAtLeastForMs =
    o.lockAtLeastFor === undefined ? 0 : parseDuration(o.lockAtLeastFor, at('lockAtLeastFor'));
  if (lockAtLeastForMs > lockAtMostForMs) {
    throw invalidArgument(
      `${at('lockAtLeastFor')} (${lockAtLeastForMs} ms) must not exceed lockAtMostFor (${lockAtMostForMs} ms)`,
    );
  }
  if (o.jitter !== undefined && trigger === undefined)
    throw invalidArgument(
      `${at('jitter')} needs the job's own trigger (cron, every or at); a stored schedule takes its own jitter`,
    );
  const jitter = compileJitter(o.jitter, trigger, `job ${JSON.stringify(job)}`);
  const { given: limits, bounds } = boundsOf(o, trigger !== undefined, job);
  if (o.exclude !== undefined && trigger === undefined)
    throw invalidArgument(
      `${at('exclude')} needs the job's own trigger (cron, every or at); a stored schedule takes its own exclude`,
    );
  const exclude = compileExclude(o.exclude, cronZone(trigger), `job ${JSON.stringify(job)}`);
  if (o.recover !== undefined && typeof o.recover !== 'boolean')
    throw invalidArgument(`${at('recover')} must be true or false`);
  return {
    name: job,
    trigger: trigger && bounded(trigger, limits),
    triggerSource,
    jitter,
    bounds,
    exclude,
    overlap: oneOf(o.overlap, ['skip', 'queue', 'queue-all', 'replace', 'allow'], 'skip', at('overlap')),
    misfire: oneOf(o.misfire, ['skip', 'run-once', 'catch-up'], 'run-once', at('misfire')),
    catchUpLimit: wholeNumber(o.catchUpLimit, 1, 10_000, 100, at('catchUpLimit')),
    misfireThresholdMs: parsePositiveDuration(o.misfireThreshold ?? '1s', at('misfireThreshold')),
    lockAtMostForMs,
    lockAtLeastForMs,
    timeoutMs: o.timeout === undefined ? undefined : parsePositiveDuration(o.timeout, at('timeout')),
    retries: wholeNumber(o.retries, 0, 100, 0, at('retries')),
    retryDelayMs: parseDuration(o.retryDelay ?? '1s', at('retryDelay')),
    recover: o.recover ?? true,
    shards: shardsOf(o.shards, at('shards')),
    limits: fleetLimitsOf(o, at, store),
  };
}
