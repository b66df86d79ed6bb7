import type { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import type { Duration } from '../core/duration.js';
import type { Logger } from '../core/logger.js';
import type { Trigger } from '../schedule/trigger.js';
import type { Store } from '../store/types.js';

export interface SchedulerOptions {
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
  startSpan(name: string, options?: object, context?: unknown): unknown;
}

export type RunSource = 'schedule' | 'misfire' | 'retry' | 'recover' | 'manual';
export type RunStatus = 'running' | 'succeeded' | 'failed' | 'timed-out' | 'skipped' | 'abandoned';

/**
 * Why a fire time was skipped. `overlap`: a run of the same overlap gate had started before the
 * fire time and had not finished by then (`by` names it); `superseded`: a queued run (overlap
 * 'queue', one run buffered per gate) that a later queued fire time (`by.fireTime`) replaced;
 * `misfire`: nobody could claim it within `misfireThreshold` (the `misfired` event; no history
 * entry). A claim that was granted and never started never causes a skip: it is recovered.
 */
export type SkipReason = 'overlap' | 'superseded' | 'misfire';

/** The run a skip was decided against: the overlapping run, or the queued fire time that superseded it. */
export interface SkipCause {
  fireTime: Date;
  /** The overlapping run's node and fencing token (`overlap`; absent for `superseded`). */
  node?: string;
  token?: number;
}

/** What a handler receives. */
export interface JobContext<Data = unknown> {
  job: string;
  /** The occurrence's nominal fire time (not when it started). */
  fireTime: Date;
  scheduleId?: string;
  data?: Data;
  shard?: { index: number; count: number; param?: string };
  /** 1 for the first run of an occurrence; grows with retries and recoveries. */
  attempt: number;
  node: string;
  /** Fencing token of this run's claim: higher than any earlier run of the same occurrence. */
  token: number;
  /** Aborted on timeout, on stop(), or before the claim's lease could be lost. */
  signal: AbortSignal;
}

export type JobHandler<Data = unknown> = (ctx: JobContext<Data>) => Promise<unknown> | unknown;

/** One attempt of one occurrence, as kept in the store. */
export interface HistoryEntry {
  job: string;
  scheduleId?: string;
  fireTime: Date;
  shard?: number;
  node: string;
  attempt: number;
  token: number;
  source: RunSource;
  status: RunStatus;
  startedAt: Date;
  finishedAt?: Date;
  error?: string;
  /** What a succeeded handler returned, when it returned a string (its last 4,000 characters). */
  output?: string;
  /**
   * The outcome was stored only after the run's lease had lapsed (a stalled link, a long pause):
   * another node may have recovered the occurrence meanwhile — the documented at-least-once case.
   */
  leaseLapsed?: boolean;
  /** (`skipped`) why: see {@link SkipReason}. Absent only on entries written by builds before skips carried reasons. */
  reason?: SkipReason;
  /** (`skipped`) the run it overlapped, or the queued fire time that superseded it. */
  by?: SkipCause;
}

export interface RunEvent {
  job: string;
  scheduleId?: string;
  fireTime: Date;
  shard?: number;
  attempt: number;
  token: number;
  node: string;
  source: RunSource;
}

export interface SchedulerEvents {
  /** `startedAt`: store-time estimate of the handler's start (fire time to start = lateness). */
  started: RunEvent & { startedAt: Date };
  /**
   * Emitted once the outcome is stored. `leaseLapsed`: it was stored only after the run's lease had
   * lapsed, so another node may have recovered the occurrence (at-least-once); absent otherwise.
   */
  succeeded: RunEvent & { durationMs: number; leaseLapsed?: boolean };
  /** `durationMs`: how long the attempt's handler ran (monotonic clock). `leaseLapsed`: as for `succeeded`. */
  failed: RunEvent & {
    error: unknown;
    status: 'failed' | 'timed-out';
    willRetry: boolean;
    durationMs: number;
    leaseLapsed?: boolean;
  };
  /** A fire time recorded skipped (its history entry holds the same `reason` and `by`). */
  skipped: {
    job: string;
    scheduleId?: string;
    fireTime: Date;
    shard?: number;
    reason: 'overlap' | 'superseded';
    by: SkipCause;
  };
  /**
   * Fire times nobody claimed within `misfireThreshold`. `run`: one per replayed fire time
   * (`fireTime`; `count` 1). `skipped`: one per job (stored schedule) and tick for all the fire
   * times it skips, from `firstFireTime` to `fireTime` (the latest), `count` of them — absent only
   * for a cron span too long to count cheaply (more than 1,000).
   */
  misfired: {
    job: string;
    scheduleId?: string;
    fireTime: Date;
    action: 'skipped' | 'run';
    firstFireTime: Date;
    count?: number;
  };
  error: { error: unknown; during: string };
}

export interface NodeInfo {
  id: string;
  host: string;
  pid: number;
  version: string;
  startedAt: Date;
  lastSeen: Date;
}

/** A job as recorded in the store by the nodes that define it (see `scheduler.jobs()`). */
export interface JobInfo {
  name: string;
  /** The job's own trigger as defined; `null` for a job that runs only from stored schedules and `trigger()`. */
  trigger: Trigger | null;
  /** The job's options with defaults filled in (durations in ms). */
  options: Record<string, unknown>;
  paused: boolean;
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

export interface StoredSchedule {
  id: string;
  job: string;
  cron?: string;
  every?: Duration;
  at?: Date | string | number;
  timezone?: string;
  data?: unknown;
}
