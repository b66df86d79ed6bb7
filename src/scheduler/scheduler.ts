import { invalidArgument, OncelyError } from '../core/errors.js';
import { INTERNAL_ABORT } from '../core/signals.js';
import type { Store } from '../store/types.js';
import { Claims } from './claim/claim.js';
import { HighWater } from './claim/high-water.js';
import { Overlap } from './claim/overlap.js';
import { type BackfillOptions, type BackfillResult, backfill } from './control/backfill.js';
import { type Calendars, createCalendars, requireCalendars } from './control/calendars.js';
import { Feed } from './control/feed.js';
import {
  type PauseOptions,
  pauseJob,
  resumeJob,
  type TriggerOptions,
  triggerJob,
} from './control/job-control.js';
import { Requests } from './control/requests.js';
import { createSchedules, type Schedules } from './control/schedules.js';
import { Due } from './due/due.js';
import { DueIndex } from './due/due-index.js';
import { Misfires } from './due/misfire.js';
import { sourceKey } from './internal-types.js';
import { type JobOptions, jobSpec } from './job-options.js';
import { keys } from './keys.js';
import { Loop } from './loop.js';
import { NodeState, sharedController } from './node-state.js';
import { queryAudit } from './observe/audit-query.js';
import type { Listener } from './observe/events.js';
import { type HistoryQuery, queryHistory } from './observe/history-query.js';
import { listJobs, listNodes } from './observe/inspect.js';
import { type NextOptions, nextOfJob } from './observe/next-runs.js';
import { resolveOptions } from './options.js';
import { PageRecovery } from './recover/page-recovery.js';
import { Recovery } from './recover/recover.js';
import { Runs } from './run/runs.js';
import type {
  AuditEntry,
  AuditQuery,
  HistoryEntry,
  JobHandler,
  JobInfo,
  NodeInfo,
  SchedulerEvents,
  SchedulerOptions,
} from './types.js';

/**
 * A cluster scheduler node. Every node that runs `createScheduler` on the same store with the
 * same job definitions shares the work: each occurrence `(job, schedule, fireTime, shard)` is
 * claimed by exactly one node, on the store's clock.
 *
 * @example
 * const scheduler = createScheduler({ store });
 * scheduler.define('send-report', { cron: '0 9 * * *', timezone: 'Europe/Berlin' }, async (ctx) => {
 *   await sendReport({ fencingToken: ctx.token, signal: ctx.signal });
 * });
 * await scheduler.start();
 */
export class Scheduler {
  /** This node's id: `SchedulerOptions.node`, or the default `host:pid:random`. */
  readonly node: string;
  private readonly store: Store;
  private readonly state: NodeState;
  private readonly feed: Feed;
  private readonly loop: Loop;
  private loopPromise: Promise<void> | undefined;
  /** start() and stop() run one after another, in call order (each waits for the one before). */
  private lifecycle: Promise<void> = Promise.resolve();
  /** stop() calls not yet done: a start() queued before one of them does not start the loop. */
  private stopsQueued = 0;
  /** From the beginning of start() to the end of stop(): define() registers its job itself. */
  private active = false;

  // The work is done in rooms along an occurrence's journey, which share one NodeState: `feed`
  // (poll: pauses, the stored schedules' change signal, heartbeat; `requests` and `recover` turn
  // what it read into claims) → `due` (tick: what is due now — job triggers, and the stored
  // schedules' `due-index` with `due-entry` — misfires) → `claim` (batched acquire with overlap gates;
  // `overlap` when a gate is taken) → `runs` (launch) → `run` (one attempt); `loop` times it all.
  // Each room gets the rooms it hands work to here, so imports only point down.
  constructor(options: SchedulerOptions) {
    const state = new NodeState(resolveOptions(options));
    this.state = state;
    this.node = state.node;
    this.store = state.store;
    const highWater = new HighWater(state);
    const runs = new Runs(state, highWater);
    const claims = new Claims(state, new Overlap(state, highWater), runs);
    this.feed = new Feed(
      state,
      new Requests(state, claims),
      new Recovery(state, claims),
      new PageRecovery(state, runs),
    );
    const due = new Due(state, new Misfires(state, highWater), claims, new DueIndex(state));
    this.loop = new Loop(state, this.feed, due);
    this.schedules = createSchedules(state);
    this.calendars = createCalendars(state);
  }

  // ── events ────────────────────────────────────────────────────────────────────────────────

  /**
   * Calls `listener` with each `event`'s payload (see {@link SchedulerEvents}); returns the scheduler.
   *
   * @example
   * scheduler.on('failed', (e) => console.error(e.job, e.fireTime, e.error));
   */
  on<K extends keyof SchedulerEvents>(event: K, listener: Listener<K>): this {
    this.state.events.on(event, listener);
    return this;
  }

  /** Removes a listener added with `on` or `once`; returns the scheduler. */
  off<K extends keyof SchedulerEvents>(event: K, listener: Listener<K>): this {
    this.state.events.off(event, listener);
    return this;
  }

  /** Like `on`, for the next `event` only. Tests await an event this way instead of sleeping. */
  once<K extends keyof SchedulerEvents>(event: K, listener: Listener<K>): this {
    this.state.events.once(event, listener);
    return this;
  }

  // ── definitions ───────────────────────────────────────────────────────────────────────────

  /** Defines a job; works before and after `start()`. Throws `INVALID_ARGUMENT` naming the job and field. */
  define<Data = unknown>(name: string, options: JobOptions, handler: JobHandler<Data>): this {
    const s = this.state;
    const spec = jobSpec(name, options, s.store.capabilities);
    if (typeof handler !== 'function')
      throw invalidArgument(`job ${JSON.stringify(spec.name)}: handler must be a function`);
    if (s.defined.has(spec.name))
      throw invalidArgument(`job ${JSON.stringify(spec.name)} is already defined on this scheduler`);
    s.defined.set(spec.name, { spec, handler: handler as JobHandler });
    if (spec.trigger) {
      s.sources.set(sourceKey(spec.name, undefined), {
        job: spec.name,
        scheduleId: undefined,
        trigger: spec.trigger,
        jitter: spec.jitter,
        exclude: spec.exclude,
        data: undefined,
        cursor: undefined,
        queue: [],
      });
    }
    for (const id of spec.exclude?.calendars ?? []) s.jobCalendars.add(id);
    s.dueWakeAt = 0;
    if (this.active) {
      // start() checked the calendars of the jobs defined before it; this one's are checked now,
      // and a missing one reported (it excludes nothing until it is stored).
      if (spec.exclude && spec.exclude.calendars.length > 0)
        void requireCalendars(s.store, [
          { exclude: spec.exclude, what: `job ${JSON.stringify(spec.name)}` },
        ]).catch((err) => s.emit('error', { error: err, during: `define of ${spec.name}` }));
      // Other nodes learn at this node's next heartbeat (written at the next poll) that it runs the job too.
      s.nextHeartbeatAt = 0;
      void this.feed
        .registerJobs([spec])
        .catch((err) => s.emit('error', { error: err, during: 'job registry' }));
      s.poke();
    }
    return this;
  }

  // ── lifecycle ─────────────────────────────────────────────────────────────────────────────

  /**
   * Starts claiming. Resolves once the node has read the store's clock and registered its jobs.
   * start() and stop() take effect in call order: a second start() while started (or starting)
   * does nothing more, and a stop() called during start() leaves the node stopped.
   */
  start(): Promise<void> {
    return this.serially(() => this.startNow());
  }

  /**
   * Stops claiming, lets running handlers finish for up to `stopTimeout`, then aborts their
   * signals, gives handlers that ignore them up to another `stopTimeout` (at most 10 s; their
   * claims kept alive), and frees what is still unfinished for another node to recover.
   */
  stop(): Promise<void> {
    this.stopsQueued++;
    return this.serially(async () => {
      try {
        await this.stopNow();
      } finally {
        this.stopsQueued--;
      }
    });
  }

  private serially(step: () => Promise<void>): Promise<void> {
    const run = this.lifecycle.then(step);
    this.lifecycle = run.catch(() => {});
    return run;
  }

  private async startNow(): Promise<void> {
    const s = this.state;
    if (this.loopPromise || this.stopsQueued > 0) return;
    this.active = true;
    try {
      // Shared by every wait that stop() cuts short (each early grant sleeps on it): no listener cap.
      s.stopping = sharedController();
      s.abandon = sharedController();
      // A restarted node starts afresh: heartbeat at its first poll (or nodes() misses it for up
      // to 5 s), no back-off left over.
      s.failures = 0;
      s.answeredSinceFailure = false;
      s.nextHeartbeatAt = 0;
      s.nextPollAt = 0;
      // Twice: the first call opens a connection (TCP, TLS, authentication), so its round trip —
      // the estimate's error bound — is ~10× what a warm one takes, and the loop wakes that much
      // after each fire time until a tighter sample replaces it (1,000 jobs on 3 node processes:
      // ticks up to 30 ms late for the first 10 s). The second sample is on the warm connection.
      await s.storeClock.sample();
      await s.storeClock.sample();
      s.clockSampledAt = s.clock.monotonic();
      s.startedAt = s.storeClock.estimate();
      // Nodes started together spread their sweeps over the interval.
      s.nextSweepAt = s.startedAt + s.random() * s.sweepMs;
      const specs = [...s.defined.values()].map((job) => job.spec);
      // define() cannot read the store: the calendars the jobs' exclusions name must exist by now.
      await requireCalendars(
        s.store,
        specs.map((spec) => ({ exclude: spec.exclude, what: `job ${JSON.stringify(spec.name)}` })),
      );
      await this.feed.registerJobs(specs);
      // stop() was called meanwhile: it runs next and finds nothing started.
      if (this.stopsQueued > 0) {
        this.active = false;
        return;
      }
      await this.feed.poll();
      this.loopPromise = this.loop.loop();
    } catch (err) {
      this.active = false;
      s.stopping = undefined;
      throw err;
    }
  }

  private async stopNow(): Promise<void> {
    const s = this.state;
    if (!this.loopPromise || !s.stopping) {
      s.stopping?.abort();
      this.active = false;
      return;
    }
    s.stopping.abort();
    s.poke();
    await this.loopPromise;
    // Other nodes take over this node's share at once instead of after a grace (spread.ts).
    s.spread.self(s.defined, true);
    await this.feed.announceStopping().catch(() => {});
    const drained = Promise.all([...s.running]);
    const timer = new AbortController();
    await Promise.race([drained, s.clock.sleep(s.stopTimeoutMs, timer.signal)]);
    timer.abort(INTERNAL_ABORT);
    if (s.running.size > 0) {
      s.abandon.abort(new OncelyError('CLOSED', `scheduler ${this.node} stopped`));
      await Promise.all([...s.running]);
    }
    await s.limits.stop(); // the fleet permits still held go back now, not when the entry lapses
    await this.store.delete(keys.node(this.node)).catch(() => {});
    this.loopPromise = undefined;
    this.active = false;
  }

  // ── control ───────────────────────────────────────────────────────────────────────────────

  /**
   * Runs the job once, now, on whichever node defining it claims the request first. `actor`: who
   * asks, for the audit trail (default `createScheduler({ actor })`, else the node id).
   */
  async trigger(job: string, options: TriggerOptions = {}): Promise<void> {
    await triggerJob(this.state, job, options);
  }

  /**
   * Runs once each fire time in `[from, to)` of the job's own trigger (or of its stored schedule
   * `scheduleId`) that has not run, in order, source `backfill`; one that ran is not run again.
   * Returns how many runs this call queued (two calls at once queue each fire time once). `to` may
   * not be after the store's clock; at most MAX_BACKFILL_OCCURRENCES per call. See docs/backfill.md.
   *
   * @example
   * const { queued } = await scheduler.backfill({ job: 'send-report', from: '2026-12-01T00:00:00Z', to: '2026-12-02T00:00:00Z' });
   */
  async backfill(options: BackfillOptions): Promise<BackfillResult> {
    return backfill(this.state, options);
  }

  /**
   * Pauses the job on every node (within one poll interval). `note` (at most 1,000 characters) is
   * kept with the pause (`jobs()`, `oncely status`) and in the audit trail, as `actor` is.
   */
  async pause(job: string, options: PauseOptions = {}): Promise<void> {
    await pauseJob(this.state, job, options);
  }

  /** Resumes the job on every node; what fell due while paused follows its misfire policy. */
  async resume(job: string, options: { actor?: string } = {}): Promise<void> {
    await resumeJob(this.state, job, options);
  }

  /**
   * The audit trail, newest first: who changed what (a changed job definition, stored schedules
   * upserted or removed, pauses, resumes, triggers), kept for `auditRetention`. Filter by `job`
   * or `scheduleId`; page with `after: lastEntry.id`. See docs/audit.md.
   *
   * @example
   * const [last] = await scheduler.audit({ job: 'send-report', limit: 1 });
   * console.log(last?.actor, last?.action, last?.note);
   */
  async audit(query: AuditQuery = {}): Promise<AuditEntry[]> {
    return queryAudit(this.store, query);
  }

  /**
   * History, newest fire time first: one record per finished attempt, plus the attempts running
   * now (from their in-flight records, status `running`). `before` pages: a `Date` or epoch ms
   * (older fire times only) or `historyCursor(lastEntryOfThePreviousPage)` (exactly the next
   * page). See history-query.ts for the order and what it reads.
   */
  async history(options: HistoryQuery = {}): Promise<HistoryEntry[]> {
    return queryHistory(this.store, options);
  }

  /**
   * The next `count` (default 5, at most 1,000) starts of the job's own trigger that will really
   * happen, ascending: each fire time plus its jitter offset (`scheduledAt`, the same function the
   * scheduler claims by; the nominal fire time is history's `fireTime`); `[]` while the job is
   * paused or without a trigger of its own. A fire time due but not yet claimed is included while
   * it is on time. Reads the job record the nodes write: needs no `define()` here. `NOT_FOUND` if
   * no node recorded the job. See docs/next.md.
   *
   * @example
   * const [first] = await scheduler.next('nightly-export', { count: 1 });
   */
  async next(job: string, options: NextOptions = {}): Promise<Date[]> {
    return nextOfJob(this.store, job, options);
  }

  /** Nodes whose heartbeat is current. */
  async nodes(): Promise<NodeInfo[]> {
    return listNodes(this.store);
  }

  /**
   * Every job any node has defined on this store (records outlive their nodes): trigger, options,
   * pause state, next fire times, latest run and the live nodes defining it. Needs no `define`.
   */
  async jobs(options: { nextCount?: number } = {}): Promise<JobInfo[]> {
    return listJobs(this.store, options);
  }

  /**
   * This node's metrics in the Prometheus text format (runs, durations, lateness, claims,
   * misfires, store errors, runs going on; see docs/observability.md), counted since the
   * scheduler was created. Serve it from the app's `/metrics`, or pass `registry` to
   * `createScheduler` to have them in the app's own prom-client registry.
   */
  metrics(): Promise<string> {
    return this.state.telemetry.metrics.render();
  }

  /** Stored per-user/per-tenant schedules of defined jobs, kept in the store and seen by every node within one poll. */
  readonly schedules: Schedules;

  /**
   * Shared calendars of dates to skip (`exclude: [{ calendar: id }]` on jobs and stored
   * schedules): `upsert`, `get`, `remove`, `list`. Read once per node and cached; a change reaches
   * every node within one poll. See docs/calendars.md.
   *
   * @example
   * await scheduler.calendars.upsert({ id: 'holidays-de', dates: ['2026-12-25', '2026-12-26'], timezone: 'Europe/Berlin' });
   */
  readonly calendars: Calendars;
}

/**
 * Creates a scheduler node on a store. Define jobs, then `start()`; run the same code on every
 * instance of the service. Options: {@link SchedulerOptions}; events: {@link SchedulerEvents}.
 *
 * @example
 * import { createScheduler, openStore } from 'oncely';
 *
 * const store = await openStore('postgres://app@db/app');
 * const scheduler = createScheduler({ store });
 * scheduler.define('nightly-report', { cron: '0 2 * * *', timezone: 'Europe/Berlin' }, async (ctx) => {
 *   await buildReport({ signal: ctx.signal });
 * });
 * await scheduler.start();
 * process.on('SIGTERM', () => scheduler.stop());
 */
export function createScheduler(options: SchedulerOptions): Scheduler {
  return new Scheduler(options);
}
