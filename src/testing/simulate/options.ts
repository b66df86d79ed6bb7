import type { Duration } from '../../core/duration.js';
import { invalidArgument } from '../../core/errors.js';
import type { Exclusion } from '../../schedule/exclude.js';
import type { Jitter } from '../../schedule/jitter.js';
import type { JobOptions } from '../../scheduler/job-options.js';
import type { JobContext } from '../../scheduler/types.js';
import type { Store } from '../../store/types.js';
import { Rng } from './random.js';

/** What a simulated handler may use besides its `ctx`: waiting and randomness on the simulation's terms. */
export interface SimContext {
  /** Waits on the node's virtual clock (never use real timers in a simulated handler); resolves early when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Seeded uniform randomness in [0, 1). */
  random(): number;
  /** Virtual ms since the simulation began. */
  now(): number;
}

/** A job of the simulation: a name, `define` options, and an optional handler. */
export interface SimJob {
  /** The job's name. */
  name: string;
  /** The options you pass to `scheduler.define` (the real validation applies). */
  options: JobOptions;
  /**
   * Your handler, run by the real scheduler on virtual time. It must wait only through
   * `sim.sleep` (or `ctx.signal`). Default: works for `runMs` (honouring `ctx.signal`), then
   * succeeds, or throws with probability `failRate`.
   */
  handler?: (ctx: JobContext, sim: SimContext) => unknown;
  /** The default handler's run time, drawn from [min, max] ms (default [20, 300]). */
  runMs?: [number, number];
  /** The default handler's failure probability (default 0). */
  failRate?: number;
  /**
   * Stored schedules of this job (`scheduler.schedules.upsert`), upserted on the store server
   * itself (no network faults) through the real `schedules.upsert`, so the real validation applies.
   * At most {@link MAX_SIM_SCHEDULES} in all jobs together. The checker judges their fire times as
   * it judges the job's own: each run once, never twice at once, none lost.
   */
  schedules?: SimSchedule[];
  /**
   * Pauses of this job (`scheduler.pause(job)`) or of one of its stored schedules
   * (`scheduler.schedules.pause(id)`), and their resumes, called on the store server itself (no
   * network faults) through the real API. The checker bears every `paused` skip out against them.
   */
  pauses?: SimPause[];
  /**
   * `scheduler.backfill()` calls for this job's own trigger or one of its stored schedules, made
   * on the store server itself through the real API. The checker holds each to its promise: every
   * fire time in the range that had not run runs once, none runs twice.
   */
  backfills?: SimBackfill[];
}

/**
 * A pause of a simulated job, or of one of its stored schedules, from `at` until `resumeAt`
 * (virtual ms). Pauses of one target (the job, or one schedule) may not overlap; a paused stored
 * schedule must stay in the store until it is resumed (a removal ends a pause).
 *
 * @example
 * { at: 10_000, resumeAt: 16_000, note: 'mail provider down' }      // the whole job: scheduler.pause(job)
 * { scheduleId: 'user-42', at: 8_000, resumeAt: 14_000 }             // one schedule: schedules.pause(id)
 */
export interface SimPause {
  /** One of the job's stored schedules (its `id` in `schedules`); absent: the whole job. */
  scheduleId?: string;
  /** Virtual ms at which it is paused. */
  at: number;
  /** Virtual ms at which it is resumed (after `at`); default: never. */
  resumeAt?: number;
  /** The pause's note (at most 1,000 characters). */
  note?: string;
}

/**
 * A `scheduler.backfill({ job, scheduleId?, from, to })` call of a simulated job, made at virtual
 * ms `at` (from 2,000, once the nodes have recorded their jobs). `from` and `to` are on the
 * simulated store's clock, as `startAt`/`endAt` are (virtual 0 is epoch ms 1,900,000,000,000);
 * `to` may not be after the store's clock at `at`.
 *
 * @example
 * // The job's own fire times from virtual 5 s to 12 s, backfilled at 20 s:
 * { from: 1_900_000_005_000, to: 1_900_000_012_000, at: 20_000 }
 */
export interface SimBackfill {
  /** One of the job's stored schedules (in the store at `at`); absent: the job's own trigger. */
  scheduleId?: string;
  /** The range's start, inclusive: a `Date`, an ISO-8601 string or epoch ms. */
  from: Date | string | number;
  /** The range's end, exclusive. */
  to: Date | string | number;
  /** Virtual ms at which `backfill()` is called. */
  at: number;
}

/**
 * One stored schedule of a simulated job: what you pass to `scheduler.schedules.upsert` without
 * `job` (the enclosing job), plus when it is upserted and removed, in virtual ms.
 *
 * One id may appear several times, one version after another: an entry whose `upsertAt` equals
 * the previous one's `removeAt` re-upserts the id then (a new trigger or data; no removal between).
 *
 * @example
 * { id: 'user-42', cron: '* * * * * *', data: { user: 42 } }              // from the start
 * { id: 'user-43', every: '2s', upsertAt: 10_000, removeAt: 20_000 }      // for 10 s
 */
export interface SimSchedule {
  /** The schedule's id (1-200 printable characters; unique per store). */
  id: string;
  /** A cron pattern (croner syntax; 6 fields: seconds first). */
  cron?: string;
  /** An interval, counted from the Unix epoch. */
  every?: Duration;
  /** One fire time. */
  at?: Date | string | number;
  /** IANA time zone for `cron` (default UTC). */
  timezone?: string;
  /**
   * Each fire time starts at an offset in `[0, max)` after it (docs/jitter.md); such fire times are
   * claimed up to 2 s ahead of their starts. The checker judges the fire times, as without it.
   */
  jitter?: Jitter;
  /**
   * No fire time before this instant, inclusive (docs/bounds.md): a `Date`, ISO-8601 or epoch ms
   * on the simulated store's clock, which starts at epoch ms 1,900,000,000,000 (virtual 0).
   */
  startAt?: Date | string | number;
  /** No fire time after this instant, inclusive. */
  endAt?: Date | string | number;
  /** The schedule ends once this many of its occurrences started (fleet-wide); the checker holds it to that (`too-many-runs`). */
  maxRuns?: number;
  /**
   * Fire times not to run, each recorded skipped with reason `excluded` (docs/calendars.md); the
   * checker bears every such skip out against this list and the simulation's `calendars`.
   */
  exclude?: Exclusion[];
  /** `ctx.data` of its runs (JSON; the whole schedule at most 64 KiB). */
  data?: unknown;
  /** Virtual ms at which it is upserted (default: before the nodes start). */
  upsertAt?: number;
  /** Virtual ms at which it is removed (`schedules.remove`); default: never. */
  removeAt?: number;
}

/** A calendar of a simulation (see `SimulateOptions.calendars`): what `scheduler.calendars.upsert` takes. */
export interface SimCalendar {
  /** Its id (1-200 printable characters). */
  id: string;
  /** Its dates, `YYYY-MM-DD` (the simulated store's clock starts at 2030-03-17T17:46:40Z). */
  dates: string[];
  /** Its IANA time zone (default: the excluding trigger's, else UTC). */
  timezone?: string;
}

/** Stored schedules per simulation at most (all jobs together, every version counted). */
export const MAX_SIM_SCHEDULES = 10_000;

/** Virtual ms before the checked window: the nodes start within the first 500 ms and record their jobs. */
export const WARMUP_MS = 2_000;

/** Which faults to draw from the seed, and how often; every field is optional (default: none but latency). */
export interface SimFaults {
  /** Round-trip time of each store call, drawn from [min, max] ms (default [2, 20]). */
  latencyMs?: [number, number];
  /** A call's request never reaches the store (caller times out). */
  lostRequestRate?: number;
  /** The store applies a call but its reply is lost (caller times out: it cannot know). */
  lostReplyRate?: number;
  /** How many times a faulty node is cut off from the store, each for `partitionMs`. */
  partitions?: number;
  /** How long each partition lasts, drawn from [min, max] ms (default [1000, 15000]). */
  partitionMs?: [number, number];
  /** How many times a faulty node crashes (no drain, no stop) and comes back after `downMs`, with its old id or a new one. */
  crashes?: number;
  /** How long a crashed node stays down, drawn from [min, max] ms (default [500, 10000]). */
  downMs?: [number, number];
  /** A node's local clock runs fast or slow by up to this fraction (0.01 = 1 %). */
  clockDriftRate?: number;
  /** A node's local monotonic clock starts up to this many ms off (oncely never compares local clocks: it should not matter). */
  clockSkewMs?: number;
  /** Chance that a node's timer fires late (a busy event loop, a GC pause), by up to `stallMs`. */
  stallRate?: number;
  /** How late a stalled timer fires at most, in ms (default 500). */
  stallMs?: number;
}

/** The fault events of one run, drawn from the seed (or given: shrinking removes them one by one). */
export interface FaultPlan {
  /** Node crashes. */
  crashes: {
    /** The node's index (0-based). */
    node: number;
    /** When it crashes, virtual ms. */
    at: number;
    /** How long it stays down, ms. */
    downMs: number;
    /** Whether it comes back with a new node id (else its old one). */
    newId: boolean;
  }[];
  /** Network partitions between a node and the store. */
  partitions: {
    /** The node's index (0-based). */
    node: number;
    /** When the partition starts, virtual ms. */
    from: number;
    /** When it ends, virtual ms. */
    to: number;
  }[];
  /** Per node: local clock rate - 1, and origin offset. */
  drift: number[];
  /** Per node: the local monotonic clock's origin offset, ms. */
  skew: number[];
}

/**
 * What `simulate(options)` accepts. The same options and seed give the same run, trace included.
 *
 * @example
 * await simulate({ seed: 7, jobs: [{ name: 'report', options: { every: '1s' } }], faults: { crashes: 2 } });
 */
export interface SimulateOptions {
  /** The seed every random choice (faults, latencies, run times) is drawn from; a whole number. */
  seed: number;
  /** Scheduler nodes (default 3). */
  nodes?: number;
  /** The jobs every node defines. */
  jobs: SimJob[];
  /**
   * Calendars (`scheduler.calendars.upsert`) stored before the nodes start, for exclusions
   * `{ calendar: id }` of the jobs and their schedules; they stay as given for the whole run.
   */
  calendars?: SimCalendar[];
  /** Virtual time simulated (default 60 s). */
  durationMs?: number;
  /** Which faults to draw from the seed (default: none but latency). */
  faults?: SimFaults;
  /**
   * The first this-many nodes get no faults but latency (default 1). With at least one, every
   * fire time must be handled and (see checker.ts) every started occurrence finished.
   */
  healthyNodes?: number;
  /**
   * Faults stop this long before the end, so that recovery can finish before the liveness checks
   * (default: the longest lease + the longest run + 2 polls + 5 s).
   */
  settleMs?: number;
  /** A store call whose reply does not come fails after this long (default 1 s). */
  storeTimeoutMs?: number;
  /** Options every node's `createScheduler` gets. */
  scheduler?: {
    /** `createScheduler`'s `pollInterval`. */
    pollInterval?: Duration;
    /** `createScheduler`'s `concurrency`. */
    concurrency?: number;
  };
  /** An explicit fault plan instead of one drawn from the seed. */
  plan?: FaultPlan;
  /**
   * The store server behind the simulated network (default: a `MemoryStore` on the virtual
   * clock). Yours must be in-process and read time only from `clock` (store ms); the checker then
   * judges the scheduler on top of it (a store that breaks the contract shows up as violations).
   */
  server?: (clock: () => number) => Store;
  /** Violation kinds not to report (a known open issue you do not want to stop a sweep). */
  ignore?: readonly string[];
}

export type Range = [number, number];

export function checkRange(value: unknown, what: string): Range | undefined {
  if (value === undefined) return undefined;
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    !value.every((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0) ||
    value[0] > value[1]
  )
    throw invalidArgument(`simulate: ${what} must be [min, max] with 0 <= min <= max`);
  return value as Range;
}

export function checkRate(value: unknown, what: string): number {
  if (value === undefined) return 0;
  if (typeof value !== 'number' || !(value >= 0 && value <= 1))
    throw invalidArgument(`simulate: ${what} must be a number from 0 to 1`);
  return value;
}

/** Draws the fault plan from the seed: which faulty node, when, for how long. */
export function drawPlan(
  seed: number,
  nodes: number,
  healthy: number,
  faults: SimFaults,
  window: Range,
): FaultPlan {
  const rng = Rng.derive(seed, 'plan');
  const faulty = Array.from({ length: nodes - healthy }, (_, i) => healthy + i);
  const pick = () => faulty[rng.int(0, faulty.length - 1)]!;
  const [from, to] = window;
  const plan: FaultPlan = { crashes: [], partitions: [], drift: [], skew: [] };
  for (let n = 0; n < nodes; n++) {
    const isFaulty = n >= healthy;
    const drift = faults.clockDriftRate ?? 0;
    plan.drift.push(isFaulty && drift > 0 ? rng.between(-drift, drift) : 0);
    plan.skew.push(rng.between(-(faults.clockSkewMs ?? 0), faults.clockSkewMs ?? 0));
  }
  if (faulty.length === 0 || to <= from) return plan;
  const down = checkRange(faults.downMs, 'faults.downMs') ?? [500, 10_000];
  for (let i = 0; i < (faults.crashes ?? 0); i++) {
    plan.crashes.push({
      node: pick(),
      at: Math.round(rng.between(from, to)),
      downMs: Math.round(rng.between(down[0], down[1])),
      newId: rng.chance(0.5),
    });
  }
  const cut = checkRange(faults.partitionMs, 'faults.partitionMs') ?? [1_000, 15_000];
  for (let i = 0; i < (faults.partitions ?? 0); i++) {
    const start = Math.round(rng.between(from, to));
    plan.partitions.push({
      node: pick(),
      from: start,
      to: Math.min(to, start + Math.round(rng.between(cut[0], cut[1]))),
    });
  }
  plan.crashes.sort((a, b) => a.at - b.at);
  return plan;
}
