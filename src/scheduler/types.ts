import type { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import type { Duration } from '../core/duration.js';
import type { Logger } from '../core/logger.js';
import type { Exclusion } from '../schedule/exclude.js';
import type { Jitter } from '../schedule/jitter.js';
import type { Trigger } from '../schedule/trigger.js';
import type { Store } from '../store/types.js';
import type { SkipCause, SkipReason, SkipSpan } from './skip-types.js';

/**
 * What `createScheduler(options)` accepts. Durations are milliseconds or strings (`'30s'`, `'5m'`,
 * `'1h30m'`, ISO-8601 `'PT5M'`). An unknown option is `INVALID_ARGUMENT` with a "did you mean".
 *
 * @example
 * const scheduler = createScheduler({ store, node: 'web-1', concurrency: 8, historyRetention: '30d' });
 */
export interface SchedulerOptions {
  /** The store every node of the cluster shares (required); see `openStore`. */
  store: Store;
  /** This node's id (default `host:pid:random`, plus `#2`, `#3`… for further schedulers of one process); shown in history and `nodes()`. */
  node?: string;
  /** Runs at once on this node (default 16); a node never claims more than it has free slots for. */
  concurrency?: number;
  /**
   * Where the scheduler logs. Default: warnings and errors (a handler that threw or timed out, a
   * lease lost, a store outage) to stderr through `console.warn`/`console.error`, nothing else.
   * `false` (or `silentLogger`) logs nothing. pino gets structured records `(fields, message)`;
   * any other logger (`console`, winston…) gets `(message, fields)`. See docs/observability.md.
   *
   * @example
   * createScheduler({ store, logger: pino() });   // everything, as JSON
   * createScheduler({ store, logger: false });    // nothing
   */
  logger?: Logger | false;
  /**
   * An OpenTelemetry `Tracer` for the `oncely.claim`/`oncely.run`/`oncely.finish` spans (default:
   * the global tracer provider's `oncely` tracer, a no-op until an SDK is registered). Needs
   * `@opentelemetry/api`; oncely runs without that package, and traces nothing then.
   */
  tracer?: SchedulerTracer;
  /**
   * A prom-client `Registry` that gets this scheduler's metrics too (they are always kept, and
   * `scheduler.metrics()` renders them). Schedulers sharing one registry share its counters.
   */
  registry?: Registry;
  /** How often control state (pauses, stored schedules, triggers, recovery) is read (default 1 s). */
  pollInterval?: Duration;
  /** How long history records are kept (default 7 days). */
  historyRetention?: Duration;
  /** How long audit trail entries are kept (default: `historyRetention`); see `scheduler.audit()`. */
  auditRetention?: Duration;
  /**
   * Who this scheduler's changes are recorded as in the audit trail (`scheduler.audit()`), unless a
   * call passes its own `{ actor }`: 1-255 printable characters (default: the node id).
   */
  actor?: string;
  /** How often this node deletes a bounded batch of expired records and leases (default 1 min). */
  sweepInterval?: Duration;
  /** How long `stop()` waits for running handlers before aborting them (default 30 s). */
  stopTimeout?: Duration;
  /** Local monotonic clock (tests inject one); lease maths always uses the store clock. */
  clock?: Clock;
  /**
   * Uniform random numbers in [0, 1) for jitter (retry delays, sweep spread) and request ids
   * (default `Math.random`, ids from `crypto`). The simulator injects a seeded one.
   */
  random?: () => number;
}

/** An OpenTelemetry `Tracer` (`@opentelemetry/api`), typed loosely so oncely's types need not that package. */
export interface SchedulerTracer {
  /** Starts a span, as `Tracer.startSpan` of `@opentelemetry/api` does. */
  startSpan(name: string, options?: object, context?: unknown): unknown;
}

/**
 * Why a run started: `schedule` (its fire time came), `misfire` (a missed fire time replayed by the
 * `misfire` policy), `retry` (a handler that threw, run again), `recover` (its node died mid-run),
 * `manual` (`scheduler.trigger()`), `backfill` (a past fire time that had not run, asked for by
 * `scheduler.backfill()`: docs/backfill.md).
 */
export type RunSource = 'schedule' | 'misfire' | 'retry' | 'recover' | 'manual' | 'backfill';
/**
 * The state of one attempt in history: `running`; `succeeded`; `failed` (the handler threw);
 * `timed-out` (it ran past the job's `timeout`); `skipped` (the fire time was not run, see
 * {@link SkipReason}); `abandoned` (cut off without an outcome: its node stopped, lost the lease or
 * died mid-run; the job's `recover` decides whether the occurrence runs again).
 */
export type RunStatus = 'running' | 'succeeded' | 'failed' | 'timed-out' | 'skipped' | 'abandoned';

/** What a handler receives. */
export interface JobContext<Data = unknown> {
  /** The job's name. */
  job: string;
  /** The occurrence's nominal fire time (not when it started). */
  fireTime: Date;
  /** When it was to start: `fireTime` plus its jitter (`fireTime` without); lateness counts from it. */
  scheduledAt: Date;
  /** The stored schedule this occurrence comes from (absent for the job's own trigger and for `trigger()`). */
  scheduleId?: string;
  /** The stored schedule's `data`, or the `data` given to `scheduler.trigger(job, { data })`. */
  data?: Data;
  /** For a job with `shards`: which shard of the occurrence this run is. */
  shard?: {
    /** 0-based index of this shard. */
    index: number;
    /** How many shards each occurrence has. */
    count: number;
    /** This shard's parameter, when `shards` was given as a list of strings. */
    param?: string;
  };
  /** 1 for the first run of an occurrence; grows with retries and recoveries. */
  attempt: number;
  /** The id of the node running it (`SchedulerOptions.node`). */
  node: string;
  /** Fencing token of this run's claim: higher than any earlier run of the same occurrence. */
  token: number;
  /** Aborted on timeout, on stop(), or before the claim's lease could be lost. */
  signal: AbortSignal;
}

/**
 * A job's code, given to `scheduler.define`. It may return a promise; a throw (or rejection) fails
 * the attempt. A returned string is kept in history as `output` (its last 4,000 characters).
 * Stop work when `ctx.signal` aborts.
 */
export type JobHandler<Data = unknown> = (ctx: JobContext<Data>) => Promise<unknown> | unknown;

/** One attempt of one occurrence, as kept in the store. */
export interface HistoryEntry {
  /** The job's name. */
  job: string;
  /** The stored schedule it ran for, if any. */
  scheduleId?: string;
  /** The occurrence's nominal fire time. */
  fireTime: Date;
  /** When it was to start: `fireTime` plus its jitter (`fireTime` without). Set on every entry history() returns. */
  scheduledAt?: Date;
  /** The shard index, for a sharded job. */
  shard?: number;
  /** The node that ran (or skipped) it. */
  node: string;
  /** 1 for the first run of the occurrence, then 2, 3… for retries and recoveries. */
  attempt: number;
  /** The fencing token of the attempt's claim. */
  token: number;
  /** Why it ran. */
  source: RunSource;
  /** Its state; `running` until the outcome is stored. */
  status: RunStatus;
  /** When it started, on the store's clock. */
  startedAt: Date;
  /** When its outcome was stored, on the store's clock; absent while `running`. */
  finishedAt?: Date;
  /** A failed or timed-out attempt's error, as text. */
  error?: string;
  /** What a succeeded handler returned, when it returned a string (its last 4,000 characters). */
  output?: string;
  /**
   * The outcome was stored only after the run's lease had lapsed (a stalled link, a long pause):
   * another node may have recovered the occurrence meanwhile — the documented at-least-once case.
   * On an `abandoned` attempt: its lease was lost while its handler ran (its node frozen past the
   * lease, say), so the handler may have gone on beside the next run of its overlap gate.
   */
  leaseLapsed?: boolean;
  /** (`failed`, `timed-out`) another attempt of the occurrence followed this one (a retry). */
  willRetry?: boolean;
  /** (`skipped`) why: see {@link SkipReason}. Absent only on entries written by builds before skips carried reasons. */
  reason?: SkipReason;
  /** (`skipped`) the run it overlapped, or the queued fire time that superseded it. */
  by?: SkipCause;
  /** (`skipped`, reason `paused` or `removed`) the fire times this one entry stands for: see {@link SkipSpan}. */
  span?: SkipSpan;
}

/** What every run event (`started`, `succeeded`, `failed`) carries: which attempt of which occurrence. */
export interface RunEvent {
  /** The job's name. */
  job: string;
  /** The stored schedule it runs for, if any. */
  scheduleId?: string;
  /** The occurrence's nominal fire time. */
  fireTime: Date;
  /** The shard index, for a sharded job. */
  shard?: number;
  /** 1 for the first run of the occurrence, then 2, 3… for retries and recoveries. */
  attempt: number;
  /** The fencing token of the attempt's claim. */
  token: number;
  /** The node running it (this scheduler's node). */
  node: string;
  /** Why it runs. */
  source: RunSource;
}

/**
 * The events of `scheduler.on(name, listener)`: each listener gets one object of the type below.
 * Tests can await an event instead of sleeping.
 *
 * @example
 * scheduler.on('failed', (e) => console.error(e.job, e.fireTime, e.error));
 * const done = new Promise((resolve) => scheduler.once('succeeded', resolve));
 */
export interface SchedulerEvents {
  /** `startedAt`: store-time estimate of the handler's start (fire time to start = lateness). */
  started: RunEvent & {
    /** Store-time estimate of the handler's start (scheduledAt to start = lateness). */
    startedAt: Date;
    /** When the occurrence was to start: `fireTime` plus its jitter (`fireTime` without jitter). */
    scheduledAt: Date;
  };
  /**
   * Emitted once the outcome is stored. `leaseLapsed`: it was stored only after the run's lease had
   * lapsed, so another node may have recovered the occurrence (at-least-once); absent otherwise.
   */
  succeeded: RunEvent & {
    /** How long the handler ran, in milliseconds (monotonic clock). */
    durationMs: number;
    /** `true`: the outcome was stored only after the run's lease had lapsed; absent otherwise. */
    leaseLapsed?: boolean;
  };
  /** `durationMs`: how long the attempt's handler ran (monotonic clock). `leaseLapsed`: as for `succeeded`. */
  failed: RunEvent & {
    /**
     * What the handler threw (for `timed-out`, an `OncelyError` with code `TIMEOUT`; for a run
     * replaced under overlap 'replace', the `OncelyError` with code `REPLACED` its signal got).
     */
    error: unknown;
    /** `failed`: the handler threw; `timed-out`: it ran past the job's `timeout`. */
    status: 'failed' | 'timed-out';
    /** A retry of the occurrence will follow (the job's `retries` are not used up). */
    willRetry: boolean;
    /** How long the handler ran, in milliseconds (monotonic clock). */
    durationMs: number;
    /** `true`: the outcome was stored only after the run's lease had lapsed; absent otherwise. */
    leaseLapsed?: boolean;
  };
  /** A fire time recorded skipped (its history entry holds the same `reason` and `by`). */
  skipped: {
    /** The job's name. */
    job: string;
    /** The stored schedule, if any. */
    scheduleId?: string;
    /** The fire time that was skipped. */
    fireTime: Date;
    /** The shard index, for a sharded job. */
    shard?: number;
    /** Why: see {@link SkipReason}. */
    reason: 'overlap' | 'superseded' | 'excluded' | 'paused' | 'removed';
    /** The run it overlapped, or the queued fire time that superseded it (absent for `excluded`, `paused`, `removed`). */
    by?: SkipCause;
    /** (`paused`, `removed`) the fire times skipped, from `fireTime` on: see {@link SkipSpan}. */
    span?: SkipSpan;
  };
  /**
   * Fire times nobody claimed within `misfireThreshold`. `run`: one per replayed fire time
   * (`fireTime`; `count` 1). `skipped`: one per job (stored schedule) and tick for all the fire
   * times it skips, from `firstFireTime` to `fireTime` (the latest), `count` of them — absent only
   * for a cron span too long to count cheaply (more than 1,000).
   */
  misfired: {
    /** The job's name. */
    job: string;
    /** The stored schedule, if any. */
    scheduleId?: string;
    /** The replayed fire time (`run`), or the latest skipped one (`skipped`). */
    fireTime: Date;
    /** What the job's `misfire` policy did: `run` the fire time late, or leave them `skipped`. */
    action: 'skipped' | 'run';
    /** The earliest fire time this event covers (equal to `fireTime` for `run`). */
    firstFireTime: Date;
    /** How many fire times this event covers; absent when too many to count cheaply. */
    count?: number;
  };
  /** Background work failed (a poll, sweep, or storing a run's outcome); the scheduler backs off and goes on. */
  error: {
    /** What was thrown (usually an `OncelyError`, e.g. `STORE_UNAVAILABLE`). */
    error: unknown;
    /** What it was doing, e.g. `poll`, `sweep`, `run of <job>`: for logs, not a stable value. */
    during: string;
  };
}

/** A live scheduler node, as `scheduler.nodes()` lists it. */
export interface NodeInfo {
  /** Its node id (`SchedulerOptions.node`). */
  id: string;
  /** Its host name. */
  host: string;
  /** Its process id. */
  pid: number;
  /** The oncely version it runs. */
  version: string;
  /** When it started, on the store's clock. */
  startedAt: Date;
  /** Its last heartbeat, on the store's clock. */
  lastSeen: Date;
}

/** A job as recorded in the store by the nodes that define it (see `scheduler.jobs()`). */
export interface JobInfo {
  /** The job's name. */
  name: string;
  /** The job's own trigger as defined; `null` for a job that runs only from stored schedules and `trigger()`. */
  trigger: Trigger | null;
  /** The job's options with defaults filled in (durations in ms). */
  options: Record<string, unknown>;
  /** Paused by `scheduler.pause(job)` (cluster-wide). */
  paused: boolean;
  /** While paused: since when (store time), who paused it (actor) and why (`pause(job, { note })`), as recorded. */
  pause?: {
    /** When it was paused, on the store's clock. */
    since: Date;
    /** Who paused it (absent for pauses recorded by builds before the audit trail). */
    actor?: string;
    /** The note given to `pause(job, { note })`. */
    note?: string;
  };
  /** The next fire times of its own trigger after the store's now. */
  nextFireTimes: Date[];
  /** The newest history record (newest fire time, last attempt). */
  lastRun?: HistoryEntry;
  /**
   * Live nodes that define the job now (heartbeat not expired, not stopping); empty when every
   * node that defined it is gone: then nothing runs it, neither its fire times nor a trigger.
   */
  nodes: string[];
  /** When a node last recorded the definition. */
  updatedAt: Date;
}

/**
 * A schedule kept in the store (`scheduler.schedules.upsert`): one more trigger for a defined job,
 * with its own `data`, e.g. one per user or tenant. Exactly one of `cron`, `every`, `at`.
 */
export interface StoredSchedule {
  /** Its id, unique in the store: upserting an existing id replaces that schedule. */
  id: string;
  /** The job it runs (defined with `scheduler.define` on the nodes that should run it). */
  job: string;
  /** A cron pattern: 5 fields, or 6 with seconds first (croner syntax); at most 1,024 characters. */
  cron?: string;
  /** An interval: fires on multiples of it counted from the Unix epoch. */
  every?: Duration;
  /** One fire time: a `Date`, an ISO-8601 string or epoch milliseconds. */
  at?: Date | string | number;
  /** IANA time zone for `cron` (default UTC). */
  timezone?: string;
  /** Start each fire time at an offset in `[0, max)` after it (docs/jitter.md); not the job's own jitter. */
  jitter?: Jitter;
  /**
   * Fire times not run, each recorded skipped with reason `excluded` (docs/calendars.md): a cron
   * (`{ cron, timezone? }`), a range (`{ from, to }`, to not included) or a calendar
   * (`{ calendar: id }`, stored with `scheduler.calendars.upsert`); at most 100 entries.
   */
  exclude?: Exclusion[];
  /** No fire time before this instant (inclusive): a `Date`, an ISO-8601 string or epoch ms (docs/bounds.md). */
  startAt?: Date | string | number;
  /** No fire time after this instant (inclusive); after `startAt`. */
  endAt?: Date | string | number;
  /**
   * The schedule ends once this many of its occurrences have started, fleet-wide (1 to
   * 1,000,000,000); an upsert starts the count again. See `remainingRuns`.
   */
  maxRuns?: number;
  /**
   * Read-only, set by `schedules.get`/`list` on a schedule with `maxRuns`: how many of its runs
   * may still start (0: ended). Ignored by `upsert`.
   */
  remainingRuns?: number;
  /**
   * Read-only, set by `schedules.get`/`list` on a schedule with `maxRuns` or `endAt`: `true` once
   * nothing of it will run any more (no runs remaining, or no fire time left before `endAt`). It
   * stays stored and listed; it has no due entry. Ignored by `upsert`.
   */
  ended?: boolean;
  /** JSON data handed to the handler as `ctx.data` (the whole schedule at most 64 KiB as JSON). */
  data?: unknown;
  /**
   * Read-only: set by `schedules.get`/`list` while the schedule is paused (`schedules.pause(id)`):
   * since when, who paused it and why. Ignored by `upsert` (an upsert keeps a pause).
   */
  pause?: SchedulePauseInfo;
}

/** A stored schedule's pause as `schedules.get(id)` shows it (see docs/pause.md). */
export interface SchedulePauseInfo {
  /** When it was paused, on the store's clock. */
  since: Date;
  /** Who paused it (see AuditEntry.actor). */
  actor?: string;
  /** The note given to `schedules.pause(id, { note })`. */
  note?: string;
}

export type { AuditAction, AuditEntry, AuditQuery } from './audit-types.js';
export type { SkipCause, SkipReason, SkipSpan } from './skip-types.js';
