import type { SpanContext } from '@opentelemetry/api';
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import type { Lease, Store, WriteOp } from '../../store/types.js';
import type { WriteBatcher } from '../finish/write-batch.js';
import type { JobSpec } from '../job-options.js';
import type { OccurrenceId } from '../keys.js';
import type { Tracing } from '../observe/tracing.js';
import type { JobHandler, RunSource, SchedulerEvents } from '../types.js';

/** A claimed occurrence, ready to run: the store granted `lease` (and `gate` for fleet-wide overlap control). */
export interface Claim {
  occ: OccurrenceId;
  lease: Lease;
  gate: Lease | undefined;
  /** Monotonic time just before the acquire that granted the leases was sent. */
  sentAt: number;
  attempt: number;
  source: RunSource;
  /**
   * (A page's run) store time at which its start was recorded — the page's start write, before
   * any of its handlers: the run's `startedAt`, as other nodes see it in the page's record.
   * (A run claimed ahead, with `notBefore`) its start: its in-flight record says it started then.
   */
  startedAt?: number;
  /**
   * (Claimed ahead, due/claim-lead.ts) monotonic time before which the handler must not start: its
   * start on the store clock, with a margin for clock-rate drift. The start record is written at
   * once (with `startedAt` = the start); the handler waits.
   */
  notBefore?: number;
  /** Claimed as a misfire replay (its source may say `recover`, when it follows a dead run). */
  replay?: true;
  /** When the occurrence was to start (its fire time plus jitter); absent: its fire time. */
  scheduledAt?: number;
  data: unknown;
  /** Written together with the first in-flight record (recovery: the dead attempt's history). */
  startWrites?: WriteOp[];
  /** (A recovery) the run it recovers, as its in-flight record said: see InflightRecord.runningSince. */
  runningSince?: RunningSince;
  /** (A page's run) its item's index in the page's record (the page's mark names items waiting for their gate). */
  item?: number;
  /** The recorded `oncely.claim` span that won it: its runs link to it (tracing.ts). */
  claimSpan?: SpanContext | undefined;
}

/** What an in-flight record holds: enough for another node to recover the occurrence. */
export interface InflightRecord {
  job: string;
  scheduleId?: string;
  fireTime: number;
  shard?: number;
  attempt: number;
  token: number;
  node: string;
  source: RunSource;
  data?: unknown;
  /** Store time the attempt started (history() shows it as running since then). */
  startedAt: number;
  /** When the occurrence was to start (fire time plus jitter), when that is not its fire time. */
  scheduledAt?: number;
  /** Store time of the claim and the lease length: the lease cannot end before claimedAt + leaseMs. */
  claimedAt: number;
  leaseMs: number;
  /**
   * (A recovery) the first run of the occurrence that died unfinished: the occurrence has been
   * running, from the fleet's point of view, since then. A fire time of the same gate that fell
   * due after it is fairly skipped for overlap (overlapping-run.ts), naming that run.
   */
  runningSince?: RunningSince;
}

/** The start of a run that died, carried by the in-flight records of its recoveries. */
export interface RunningSince {
  startedAt: number;
  node: string;
  token: number;
}

/** What a recovery of the run `rec` describes (its own `runningSince`, or `rec` itself). */
export function sinceOf(rec: InflightRecord): RunningSince {
  return rec.runningSince ?? { startedAt: rec.startedAt, node: rec.node, token: rec.token };
}

/**
 * What a run needs from its node: one per job and node start (runs.ts keeps it while the job's
 * definition and the node's stop signal stay the same), shared by all of the job's runs; what
 * belongs to one run is in {@link RunHooks}.
 */
export interface RunDeps {
  store: Store;
  /** Coalesces the run's writes with other runs' into few `apply` calls. */
  writes: WriteBatcher;
  node: string;
  clock: Clock;
  /** Uniform in [0, 1): retry jitter. */
  random: () => number;
  logger: Logger;
  spec: JobSpec;
  handler: JobHandler;
  emit: <K extends keyof SchedulerEvents>(event: K, payload: SchedulerEvents[K]) => void;
  /** The run started: counted now, its event built by `event` only if anyone reads it (events.ts). */
  started: (job: string, source: RunSource, lateMs: number, event: () => SchedulerEvents['started']) => void;
  /** The run succeeded: as `started`. */
  succeeded: (job: string, durationMs: number, event: () => SchedulerEvents['succeeded']) => void;
  historyRetentionMs: number;
  /** How long a finished occurrence stays claimed ("done") after its fire time. */
  doneHoldMs: number;
  /** The write that raises the occurrence's high-water mark when it starts, if it needs one. */
  highWater: (occ: OccurrenceId) => WriteOp | undefined;
  /** Aborted when stop() gives up waiting: the run is abandoned and left for recovery. */
  stopSignal: AbortSignal;
  /**
   * Calls `fn` with the reason when `stopSignal` aborts (at once if it has), until the returned
   * function is called: one listener for all runs rather than one per run.
   */
  onStop: (fn: (reason: unknown) => void) => () => void;
  /** After stopSignal, how long a handler may take to end before its claim is freed for recovery. */
  handlerSettleMs: number;
  /** Overlap 'replace': registers an attempt a newer fire time aborts (run/replace.ts). */
  replaceable: (occ: OccurrenceId) => { signal: AbortSignal; done: () => void };
  /** The current "store answers again" signal: a write waiting to retry goes at once. */
  storeBack: () => AbortSignal;
  /** Reads the store's clock (one round trip): runs claimed ahead wait for their start by it (start-at.ts). */
  storeNow: () => Promise<number>;
  /**
   * A rate-limited job's retry, or start long after its claim, waits for a start in the window
   * (fleet-limits.ts, rateStart); `count` such starts at once (a page's late runs): how many were
   * granted (0: `signal` aborted first).
   */
  rateStart?: (signal: AbortSignal, start: number, count?: number) => Promise<number>;
  /** Spans (undefined without `@opentelemetry/api`). */
  tracing?: Tracing | undefined;
}

/** What one run reports to its node. */
export interface RunHooks {
  /** Called once no handler of this run will run any more: only its finish is left (frees its slot). */
  handlerEnded?: () => void;
  /** Called when the first attempt's start record could not be stored before the lease ended. */
  notStarted?: (() => void) | undefined;
}
