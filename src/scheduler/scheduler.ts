import { EventEmitter, setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import { type Clock, StoreClock, systemClock } from '../core/clock.js';
import { parseDuration, parsePositiveDuration } from '../core/duration.js';
import { invalidArgument, OncelyError } from '../core/errors.js';
import { defaultOwner, randomId } from '../core/ids.js';
import { type Logger, silentLogger } from '../core/logger.js';
import { INTERNAL_ABORT } from '../core/signals.js';
import { packageVersion } from '../core/version.js';
import { nextFireTimes } from '../schedule/fire-times.js';
import { type CompiledTrigger, compileTrigger, type Trigger } from '../schedule/trigger.js';
import type { Lease, LeaseRequest, Store, StoredRecord, WriteOp } from '../store/types.js';
import { MAX_BATCH } from '../store/validate.js';
import { decodeHistory, encodeHistory, occFields } from './history.js';
import { listJobs, listNodes } from './inspect.js';
import { type JobOptions, type JobSpec, jobSpec, validateJobName } from './job-options.js';
import { controlKind, esc, gateScope, jobOfKey, keys, type OccurrenceId } from './keys.js';
import { type Claim, executeRun, type InflightRecord } from './run.js';
import type {
  HistoryEntry,
  JobHandler,
  JobInfo,
  NodeInfo,
  RunSource,
  SchedulerEvents,
  SchedulerOptions,
  StoredSchedule,
} from './types.js';
import { WriteBatcher } from './write-batch.js';

/** A finished occurrence stays claimed ("done") at least this long after its fire time. */
const MIN_DONE_HOLD_MS = 3_600_000;
/** Timers never sleep longer than this without re-checking the time. */
const MAX_SLEEP_MS = 30_000;
/** How many schedulers this process created (for distinct default node ids). */
let schedulersCreated = 0;
/** Appended to the owner of an overlap gate taken by a misfire replay. */
const REPLAY_MARK = ' (replay)';
/** The store clock is re-read at least this often (and after every failure). */
const CLOCK_RESAMPLE_MS = 10_000;
/** A poll reads at most this many control records (stored schedules at scale: their own issue). */
const MAX_CONTROL_RECORDS = 100_000;
/** How many missed fire times are enumerated at most per source and tick. */
const MAX_ENUMERATE = 10_000;

interface Job {
  spec: JobSpec;
  handler: JobHandler;
}

/** One stream of fire times: a job's own trigger, or one stored schedule of it. */
interface Source {
  job: string;
  scheduleId: string | undefined;
  trigger: CompiledTrigger;
  data: unknown;
  /** Every fire time up to and including this one has been handled by this node's view. */
  cursor: number | undefined;
  /** A stored schedule's trigger as read, to notice when it changes. */
  signature?: string;
  /** The next fire time after `after` (cron maths is not free, and the loop asks after every tick). */
  next?: { after: number; at: number | undefined };
}

interface Candidate {
  occ: OccurrenceId;
  source: RunSource;
  data: unknown;
  attempt: number;
  /** Run after the claim; otherwise (missed-and-skipped) only mark. */
  gate: boolean;
  /** A trigger request or pending record this candidate stands for: deleted once it is claimed. */
  consumes?: string;
  /** Written together with the run's in-flight record (recovery: the dead attempt's history). */
  startWrites?: WriteOp[];
  /** Comes from a pending (overlap queue) record (the one `consumes` names). */
  fromPending?: true;
}

type Listener<K extends keyof SchedulerEvents> = (payload: SchedulerEvents[K]) => void;

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
  readonly node: string;
  private readonly store: Store;
  private readonly concurrency: number;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly pollMs: number;
  private readonly retentionMs: number;
  private readonly stopTimeoutMs: number;
  private readonly storeClock: StoreClock;
  private readonly events = new EventEmitter();
  private readonly defined = new Map<string, Job>();
  private readonly sources = new Map<string, Source>();
  private paused = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  /** Occurrence keys of the runs going on this node (recovery never takes over its own runs). */
  private readonly runningHere = new Set<string>();
  /** The last poll saw queued (pending) runs. */
  private pendingSeen = false;
  /** Aborted (and replaced) when the store answers again after failures: writes retry at once. */
  private storeBack = sharedController();
  private loopPromise: Promise<void> | undefined;
  private stopping: AbortController | undefined;
  private readonly wake = { controller: new AbortController() };
  private abandon = sharedController();
  private startedAt = 0;
  private nextPollAt = 0;
  private lastTickAt = Number.NEGATIVE_INFINITY;
  private failures = 0;
  private readonly sweepMs: number;
  private nextSweepAt = Number.POSITIVE_INFINITY;
  private nextHeartbeatAt = 0;
  private clockSampledAt = Number.NEGATIVE_INFINITY;
  private readonly writes: WriteBatcher;
  /** The highest fire time whose high-water mark this node wrote, per mark key. */
  private readonly highWaterWritten = new Map<string, number>();

  constructor(options: SchedulerOptions) {
    if (!options || typeof options !== 'object' || !options.store) {
      throw invalidArgument('createScheduler needs { store } (see openStore)');
    }
    const known = new Set([
      'store',
      'node',
      'concurrency',
      'logger',
      'pollInterval',
      'historyRetention',
      'stopTimeout',
      'sweepInterval',
      'clock',
    ]);
    for (const field of Object.keys(options)) {
      if (!known.has(field))
        throw invalidArgument(
          `unknown scheduler option ${JSON.stringify(field)}; known: ${[...known].join(', ')}`,
        );
    }
    this.store = options.store;
    // Node ids must differ between schedulers (heartbeats and claims are keyed by them): the
    // process's owner id for the first one, with `#2`, `#3`… for further ones in the same process.
    schedulersCreated++;
    this.node =
      options.node ?? (schedulersCreated === 1 ? defaultOwner() : `${defaultOwner()}#${schedulersCreated}`);
    if (
      typeof this.node !== 'string' ||
      this.node === '' ||
      this.node.length > 200 ||
      /\p{Cc}/u.test(this.node)
    ) {
      throw invalidArgument('node must be 1-200 printable characters');
    }
    this.concurrency = options.concurrency ?? 16;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1 || this.concurrency > 10_000) {
      throw invalidArgument(`concurrency must be a whole number from 1 to 10000; got ${options.concurrency}`);
    }
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? systemClock;
    this.pollMs = parsePositiveDuration(options.pollInterval ?? '1s', 'pollInterval');
    this.retentionMs = parsePositiveDuration(options.historyRetention ?? '7d', 'historyRetention');
    this.stopTimeoutMs = parseDuration(options.stopTimeout ?? '30s', 'stopTimeout');
    this.sweepMs = parsePositiveDuration(options.sweepInterval ?? '1m', 'sweepInterval');
    this.storeClock = new StoreClock(() => this.store.now(), this.clock);
    this.writes = new WriteBatcher(this.store);
  }

  // ── events ────────────────────────────────────────────────────────────────────────────────

  on<K extends keyof SchedulerEvents>(event: K, listener: Listener<K>): this {
    this.events.on(event, listener as (p: unknown) => void);
    return this;
  }

  off<K extends keyof SchedulerEvents>(event: K, listener: Listener<K>): this {
    this.events.off(event, listener as (p: unknown) => void);
    return this;
  }

  once<K extends keyof SchedulerEvents>(event: K, listener: Listener<K>): this {
    this.events.once(event, listener as (p: unknown) => void);
    return this;
  }

  private emit<K extends keyof SchedulerEvents>(event: K, payload: SchedulerEvents[K]): void {
    if (event === 'error') {
      this.logger.error(
        `oncely scheduler ${this.node}: ${(payload as SchedulerEvents['error']).during} failed`,
        (payload as SchedulerEvents['error']).error,
      );
      // An 'error' event without listeners must not crash the process (EventEmitter would throw).
      if (this.events.listenerCount('error') === 0) return;
    }
    try {
      this.events.emit(event, payload);
    } catch (err) {
      this.logger.error(`oncely scheduler: a '${event}' listener threw`, err);
    }
  }

  // ── definitions ───────────────────────────────────────────────────────────────────────────

  /** Defines a job; works before and after `start()`. Throws `INVALID_ARGUMENT` naming the job and field. */
  define<Data = unknown>(name: string, options: JobOptions, handler: JobHandler<Data>): this {
    const spec = jobSpec(name, options);
    if (typeof handler !== 'function')
      throw invalidArgument(`job ${JSON.stringify(spec.name)}: handler must be a function`);
    if (this.defined.has(spec.name))
      throw invalidArgument(`job ${JSON.stringify(spec.name)} is already defined on this scheduler`);
    this.defined.set(spec.name, { spec, handler: handler as JobHandler });
    if (spec.trigger) {
      this.sources.set(sourceKey(spec.name, undefined), {
        job: spec.name,
        scheduleId: undefined,
        trigger: spec.trigger,
        data: undefined,
        cursor: undefined,
      });
    }
    if (this.loopPromise) {
      void this.registerJob(spec).catch((err) => this.emit('error', { error: err, during: 'job registry' }));
      this.poke();
    }
    return this;
  }

  // ── lifecycle ─────────────────────────────────────────────────────────────────────────────

  /** Starts claiming. Resolves once the node has read the store's clock and registered its jobs. */
  async start(): Promise<void> {
    if (this.loopPromise) return;
    this.stopping = new AbortController();
    this.abandon = sharedController();
    await this.storeClock.sample();
    this.clockSampledAt = this.clock.monotonic();
    this.startedAt = this.storeClock.estimate();
    // Nodes started together spread their sweeps over the interval.
    this.nextSweepAt = this.startedAt + Math.random() * this.sweepMs;
    await Promise.all([...this.defined.values()].map((job) => this.registerJob(job.spec)));
    await this.poll();
    this.loopPromise = this.loop();
  }

  /**
   * Stops claiming, lets running handlers finish for up to `stopTimeout`, then aborts their
   * signals, gives handlers that ignore them up to another `stopTimeout` (at most 10 s; their
   * claims kept alive), and frees what is still unfinished for another node to recover.
   */
  async stop(): Promise<void> {
    if (!this.loopPromise || !this.stopping) return;
    this.stopping.abort();
    this.poke();
    await this.loopPromise;
    const drained = Promise.all([...this.running]);
    const timer = new AbortController();
    await Promise.race([drained, this.clock.sleep(this.stopTimeoutMs, timer.signal)]);
    timer.abort(INTERNAL_ABORT);
    if (this.running.size > 0) {
      this.abandon.abort(new OncelyError('CLOSED', `scheduler ${this.node} stopped`));
      await Promise.all([...this.running]);
    }
    await this.store.delete(keys.node(this.node)).catch(() => {});
    this.loopPromise = undefined;
  }

  // ── control ───────────────────────────────────────────────────────────────────────────────

  /** Runs the job once, now, on whichever node defining it claims the request first. */
  async trigger(job: string, options: { data?: unknown } = {}): Promise<void> {
    validateJobName(job);
    const id = randomId(9);
    const requestedAt = await this.store.now();
    await this.store.put(
      keys.triggerRequest(job, id),
      JSON.stringify({ id, job, requestedAt, data: options.data }),
      {
        ttlMs: this.retentionMs,
      },
    );
    this.nextPollAt = 0;
    this.poke();
  }

  /** Pauses the job on every node (within one poll interval). */
  async pause(job: string): Promise<void> {
    validateJobName(job);
    await this.store.put(keys.pause(job), JSON.stringify({ by: this.node, at: await this.store.now() }));
    this.paused.add(job);
  }

  /** Resumes the job on every node; what fell due while paused follows its misfire policy. */
  async resume(job: string): Promise<void> {
    validateJobName(job);
    await this.store.delete(keys.pause(job));
    this.paused.delete(job);
    this.nextPollAt = 0;
    this.poke();
  }

  /**
   * History, newest fire time first: one record per finished attempt, plus the attempts running
   * now (from their in-flight records, status `running`).
   */
  async history(options: { job?: string; limit?: number } = {}): Promise<HistoryEntry[]> {
    const limit = options.limit ?? 100;
    const jobs =
      options.job !== undefined
        ? [options.job]
        : (await this.store.scan(keys.jobPrefix, { limit: 10_000 })).map((r) => jobOfKey(r.key));
    const [lists, inflight] = await Promise.all([
      Promise.all(jobs.map((job) => this.store.scan(keys.historyPrefix(job), { reverse: true, limit }))),
      this.store.scan(keys.inflightPrefix(options.job), { limit: 10_000 }),
    ]);
    const finished = lists.flat().map((r) => decodeHistory(r.value));
    const recorded = new Set(finished.map((h) => historyId(h)));
    const running = inflight
      .map((r) => runningEntry(JSON.parse(r.value) as InflightRecord))
      .filter((h) => !recorded.has(historyId(h)));
    return [...finished, ...running]
      .sort((a, b) => b.fireTime.getTime() - a.fireTime.getTime() || b.attempt - a.attempt)
      .slice(0, limit);
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

  /** Stored per-user/per-tenant schedules of defined jobs, kept in the store and seen by every node within one poll. */
  readonly schedules = {
    upsert: async (schedule: StoredSchedule): Promise<void> => {
      const { id, job, data: _data, ...trigger } = schedule;
      // Ids and job names are parts of occurrence keys: 200 characters each as stored (keys.ts).
      if (typeof id !== 'string' || id === '' || esc(id).length > 200 || /\p{Cc}/u.test(id))
        throw invalidArgument("schedule id must be 1-200 printable characters ('|' and '%' count 3)");
      validateJobName(job);
      compileTrigger(trigger as Trigger, `schedule ${JSON.stringify(id)}`);
      await this.store.put(keys.schedule(job, id), JSON.stringify(schedule));
      this.nextPollAt = 0;
      this.poke();
    },
    remove: async (id: string, job?: string): Promise<boolean> => {
      const found = job === undefined ? (await this.schedules.list()).find((s) => s.id === id) : { job };
      if (!found) return false;
      return this.store.delete(keys.schedule(found.job, id));
    },
    get: async (id: string): Promise<StoredSchedule | undefined> =>
      (await this.schedules.list()).find((s) => s.id === id),
    list: async (filter: { job?: string } = {}): Promise<StoredSchedule[]> => {
      const records = await this.store.scan(keys.schedulePrefix(filter.job), { limit: 10_000 });
      return records.map((r) => JSON.parse(r.value) as StoredSchedule);
    },
  };

  // ── the loop ──────────────────────────────────────────────────────────────────────────────

  private poke(): void {
    this.wake.controller.abort(INTERNAL_ABORT);
  }

  private async loop(): Promise<void> {
    const stopping = this.stopping!.signal;
    while (!stopping.aborted) {
      let sleepMs: number;
      try {
        const now = this.storeClock.estimate();
        if (now >= this.nextPollAt) await this.poll();
        await this.tick();
        sleepMs = this.untilNextEvent();
        if (this.failures > 0) {
          this.storeBack.abort(INTERNAL_ABORT);
          this.storeBack = sharedController();
        }
        this.failures = 0;
      } catch (err) {
        this.failures++;
        this.emit('error', { error: err, during: 'scheduler loop' });
        // Bounded back-off while the store is unreachable; the misfire policy covers what falls due meanwhile.
        sleepMs = Math.min(MAX_SLEEP_MS, 250 * 2 ** Math.min(this.failures, 7));
      }
      if (stopping.aborted) break;
      this.wake.controller = new AbortController();
      await this.clock.sleep(Math.max(0, Math.min(sleepMs, MAX_SLEEP_MS)), this.wake.controller.signal);
    }
  }

  /** Milliseconds until the next fire time that this node could claim, or the next poll. */
  private untilNextEvent(): number {
    const now = this.storeClock.estimate();
    let next = this.nextPollAt;
    for (const source of this.sources.values()) {
      // A fire time the last tick already saw but could not claim (no free slot, a catch-up
      // replay waiting for its predecessor) is retried when a run ends or at the next poll, not
      // in a busy loop.
      const due = this.nextDue(source, now);
      if (due !== undefined && due > this.lastTickAt) next = Math.min(next, due);
    }
    // Wake a little after the fire time: the store clock estimate is only good to ± errorBound,
    // and a claim granted before the fire time would be early.
    return next - now + Math.ceil(this.storeClock.errorBound());
  }

  private nextDue(source: Source, now: number): number | undefined {
    const after = source.cursor ?? now;
    if (source.next?.after !== after) source.next = { after, at: nextFireTimes(source.trigger, after, 1)[0] };
    return source.next.at;
  }

  /**
   * Reads cluster state — pauses, stored schedules, trigger requests, queued runs, runs in flight
   * (for recovery) — in one scan of the `ctl|` records; re-reads the store clock and writes the
   * heartbeat only every few polls. An idle node costs about 1.4 round trips per poll interval.
   */
  private async poll(): Promise<void> {
    if (this.failures > 0 || this.clock.monotonic() - this.clockSampledAt >= CLOCK_RESAMPLE_MS) {
      await this.storeClock.sample();
      this.clockSampledAt = this.clock.monotonic();
    }
    const now = this.storeClock.estimate();
    this.nextPollAt = now + this.pollMs;
    const control = await this.readControl();
    const byKind = (kind: string) => control.filter((r) => controlKind(r.key) === kind);
    this.paused = new Set(byKind('pause').map((r) => jobOfKey(r.key)));
    this.syncStoredSchedules(byKind('sched').map((r) => JSON.parse(r.value) as StoredSchedule));
    if (now >= this.nextHeartbeatAt) {
      await this.heartbeat(now);
      this.nextHeartbeatAt = now + this.heartbeatMs();
    }
    const pending = byKind('pending');
    this.pendingSeen = pending.length > 0;
    await this.claimRequests(byKind('trig'), pending);
    await this.recover(byKind('run'), now);
    if (now >= this.nextSweepAt) {
      // Expired history, heartbeats, trigger requests and "done" occurrence claims are invisible
      // but stay stored until swept: every node deletes a bounded batch now and then.
      this.nextSweepAt = now + this.sweepMs;
      await this.store
        .sweep({ limit: 1000 })
        .catch((err) => this.emit('error', { error: err, during: 'sweep' }));
    }
  }

  /** Every `ctl|` record, in pages of 10,000 (at most MAX_CONTROL_RECORDS). */
  private async readControl(): Promise<StoredRecord[]> {
    const all: StoredRecord[] = [];
    for (;;) {
      const last = all.at(-1)?.key;
      const page = await this.store.scan(keys.controlPrefix, {
        limit: 10_000,
        ...(last !== undefined && { after: last }),
      });
      all.push(...page);
      if (page.length < 10_000 || all.length >= MAX_CONTROL_RECORDS) return all;
    }
  }

  /** Heartbeats go out every 5 polls (at most every 5 s); the record lives 3 intervals (at least 15 s). */
  private heartbeatMs(): number {
    return Math.min(5 * this.pollMs, 5_000);
  }

  private syncStoredSchedules(list: StoredSchedule[]): void {
    const seen = new Set<string>();
    for (const s of list) {
      if (!this.defined.has(s.job)) continue;
      const key = sourceKey(s.job, s.id);
      seen.add(key);
      const { id, job, data, ...trigger } = s;
      const existing = this.sources.get(key);
      const signature = JSON.stringify(trigger);
      if (existing?.signature === signature) {
        existing.data = data;
        continue;
      }
      try {
        const compiled = compileTrigger(trigger as Trigger, `schedule ${JSON.stringify(id)}`);
        this.sources.set(key, {
          job,
          scheduleId: id,
          trigger: compiled,
          data,
          cursor: existing?.cursor,
          signature,
        });
      } catch (err) {
        this.emit('error', { error: err, during: `schedule ${id}` });
      }
    }
    for (const [key, source] of this.sources) {
      if (source.scheduleId !== undefined && !seen.has(key)) this.sources.delete(key);
    }
  }

  private async heartbeat(now: number): Promise<void> {
    const info = {
      id: this.node,
      host: hostname(),
      pid: process.pid,
      version: packageVersion(),
      startedAt: this.startedAt,
      lastSeen: now,
      jobs: [...this.defined.keys()],
    };
    await this.store.put(keys.node(this.node), JSON.stringify(info), {
      ttlMs: Math.max(3 * this.heartbeatMs(), 15_000),
    });
  }

  private async registerJob(spec: JobSpec): Promise<void> {
    const record = {
      name: spec.name,
      trigger: spec.triggerSource ?? null,
      options: {
        overlap: spec.overlap,
        misfire: spec.misfire,
        catchUpLimit: spec.catchUpLimit,
        misfireThresholdMs: spec.misfireThresholdMs,
        lockAtMostForMs: spec.lockAtMostForMs,
        lockAtLeastForMs: spec.lockAtLeastForMs,
        timeoutMs: spec.timeoutMs ?? null,
        retries: spec.retries,
        recover: spec.recover,
        shards: spec.shards?.count ?? null,
      },
      definedBy: this.node,
      updatedAt: await this.store.now(),
    };
    await this.store.put(keys.job(spec.name), JSON.stringify(record));
  }

  private freeSlots(): number {
    return this.concurrency - this.running.size;
  }

  private shardsOf(job: Job): (number | undefined)[] {
    return job.spec.shards ? Array.from({ length: job.spec.shards.count }, (_, i) => i) : [undefined];
  }

  /** Claims everything due now (one batched acquire) and handles what was missed. */
  private async tick(): Promise<void> {
    const now = this.storeClock.estimate() - this.storeClock.errorBound();
    this.lastTickAt = now;
    const candidates: Candidate[] = [];
    let budget = this.freeSlots();
    for (const source of this.sources.values()) {
      const job = this.defined.get(source.job);
      if (!job || this.paused.has(source.job)) continue;
      if (source.cursor === undefined) source.cursor = await this.initialCursor(source, now);
      const due: number[] = [];
      let after = source.cursor;
      for (let i = 0; i < MAX_ENUMERATE; i++) {
        // The first look is the memoised one: most ticks find nothing due for most sources.
        const f = i === 0 ? this.nextDue(source, now) : nextFireTimes(source.trigger, after, 1)[0];
        if (f === undefined || f > now) break;
        due.push(f);
        after = f;
      }
      if (due.length === 0) continue;
      const onTime = due.filter((f) => now - f <= job.spec.misfireThresholdMs);
      const missed = due.filter((f) => now - f > job.spec.misfireThresholdMs);
      // A node claims only what it has free slots for (missed times yield at most one claim per
      // shard). A source whose work does not fit keeps its cursor, so what nobody claimed in time
      // is seen again as missed and follows the misfire policy.
      const need = (onTime.length + (missed.length > 0 ? 1 : 0)) * this.shardsOf(job).length;
      if (need > budget) continue;
      budget -= need;
      if (missed.length > 0) {
        const handled = await this.handleMissed(job, source, missed);
        candidates.push(...handled.candidates);
        if (!handled.advance) continue;
        const replay = handled.candidates[0]?.occ.fireTime;
        if (replay !== undefined && onTime.length > 0 && job.spec.overlap !== 'allow') {
          // A run-once replay and on-time fire times in one tick would race for the same overlap
          // gate in one batch, and the on-time run would be recorded as skipped for "overlapping" a
          // replay that had not even started. The on-time ones come next: when the replay ends
          // (its run pokes the loop) or at the next poll; skipped only if the replay is still going.
          source.cursor = replay;
          continue;
        }
      }
      for (const f of onTime) {
        for (const shard of this.shardsOf(job)) {
          candidates.push({
            occ: { job: source.job, scheduleId: source.scheduleId, fireTime: f, shard },
            source: 'schedule',
            data: source.data,
            attempt: 1,
            gate: job.spec.overlap !== 'allow',
          });
        }
      }
      source.cursor = due.at(-1)!;
    }
    await this.claimAndRun(candidates);
  }

  /** The high-water mark in the store, or now: a brand-new job does not backfill the past. */
  private async initialCursor(source: Source, now: number): Promise<number> {
    const stored = await this.store.get(keys.highWater(source.job, source.scheduleId));
    return stored === null ? now : Number(stored);
  }

  /**
   * Missed fire times (no claim within misfireThreshold): skip, run the latest once, or replay
   * them oldest first, one at a time fleet-wide. Occurrences another node handled (high-water
   * mark, or a claim still held) are not missed. Returns the claims to attempt, and whether the
   * source may move past the missed times (catch-up keeps it until the replay is claimed).
   */
  private async handleMissed(
    job: Job,
    source: Source,
    missed: number[],
  ): Promise<{ candidates: Candidate[]; advance: boolean }> {
    const hwmKey = keys.highWater(source.job, source.scheduleId);
    const stored = await this.store.get(hwmKey);
    const hwm = stored === null ? Number.NEGATIVE_INFINITY : Number(stored);
    let open = missed.filter((f) => f > hwm);
    if (open.length > 0) {
      const held = await Promise.all(
        open.map((f) =>
          this.store.inspect(
            keys.occurrence({
              job: source.job,
              scheduleId: source.scheduleId,
              fireTime: f,
              shard: this.shardsOf(job)[0],
            }),
          ),
        ),
      );
      open = open.filter((_, i) => held[i] === null);
    }
    if (open.length === 0) return { candidates: [], advance: true };
    const { misfire, catchUpLimit } = job.spec;
    const occurrence = (f: number, shard: number | undefined): OccurrenceId => ({
      job: source.job,
      scheduleId: source.scheduleId,
      fireTime: f,
      shard,
    });
    const skip = async (times: number[]) => {
      for (const f of times) this.emitMisfired(source, f, 'skipped');
      if (times.length > 0) await this.raiseHighWater(hwmKey, Math.max(...times));
    };
    if (misfire === 'skip') {
      await skip(open);
      return { candidates: [], advance: true };
    }
    if (misfire === 'run-once') {
      const latest = open.at(-1)!;
      await skip(open.slice(0, -1));
      this.emitMisfired(source, latest, 'run');
      return {
        candidates: this.shardsOf(job).map((shard) => ({
          occ: occurrence(latest, shard),
          source: 'misfire' as const,
          data: source.data,
          attempt: 1,
          gate: job.spec.overlap !== 'allow',
        })),
        advance: true,
      };
    }
    // catch-up: keep the latest catchUpLimit, replay the oldest of them; the gate makes replays
    // sequential across the fleet, and the cursor stays until that replay is claimed.
    const excess = open.length - catchUpLimit;
    if (excess > 0) {
      await skip(open.slice(0, excess));
      open = open.slice(excess);
    }
    const oldest = open[0]!;
    this.emitMisfired(source, oldest, 'run');
    source.cursor = oldest - 1;
    return {
      candidates: this.shardsOf(job).map((shard) => ({
        occ: occurrence(oldest, shard),
        source: 'misfire' as const,
        data: source.data,
        attempt: 1,
        gate: true,
      })),
      advance: false,
    };
  }

  private emitMisfired(source: Source, fireTime: number, action: 'skipped' | 'run'): void {
    this.emit('misfired', {
      job: source.job,
      ...(source.scheduleId !== undefined && { scheduleId: source.scheduleId }),
      fireTime: new Date(fireTime),
      action,
    });
  }

  /** Raises the high-water mark; a concurrent lower write can only make a later check more careful, never re-run work (claims are per occurrence). */
  private async raiseHighWater(key: string, fireTime: number): Promise<void> {
    const current = await this.store.get(key);
    if (current === null || Number(current) < fireTime) await this.store.put(key, String(fireTime));
  }

  /**
   * One round trip for every due occurrence (and the overlap gates they need), limited to this
   * node's free slots so that an overloaded node leaves work to the others.
   */
  private async claimAndRun(candidates: Candidate[]): Promise<void> {
    if (candidates.length === 0 || this.stopping?.signal.aborted) return;
    const batch = candidates.slice(0, Math.max(0, this.freeSlots()));
    if (batch.length === 0) return;
    const requests: LeaseRequest[] = [];
    const index: { occ: number; gate: number | undefined }[] = [];
    for (const c of batch) {
      const spec = this.defined.get(c.occ.job)!.spec;
      const occ =
        requests.push({ key: keys.occurrence(c.occ), owner: this.node, leaseMs: spec.lockAtMostForMs }) - 1;
      const gate = c.gate
        ? requests.push({
            key: keys.runGate(c.occ.job, gateScope(c.occ), c.occ.shard),
            // A replay of missed work says so: an on-time fire time that finds the gate held by a
            // replay queues behind it instead of being skipped (see overlapped()).
            owner: c.source === 'misfire' ? `${this.node}${REPLAY_MARK}` : this.node,
            leaseMs: spec.lockAtMostForMs,
          }) - 1
        : undefined;
      index.push({ occ, gate });
    }
    // One acquire per MAX_BATCH requests (an occurrence and its gate stay in the same batch); the
    // batches go out together.
    const slices: { from: number; to: number }[] = [];
    for (let from = 0; from < batch.length; ) {
      let to = from;
      while (to < batch.length && (index[to]!.gate ?? index[to]!.occ) - index[from]!.occ < MAX_BATCH) to++;
      slices.push({ from, to });
      from = to;
    }
    await Promise.all(
      slices.map(async ({ from, to }) => {
        const offset = index[from]!.occ;
        const end = index[to - 1]!.gate ?? index[to - 1]!.occ;
        const sentAt = this.clock.monotonic();
        const leases = await this.store.acquire(requests.slice(offset, end + 1));
        await Promise.all(
          batch.slice(from, to).map(async (c, i) => {
            const at = index[from + i]!;
            const lease = leases[at.occ - offset] ?? null;
            const gate = at.gate === undefined ? undefined : (leases[at.gate - offset] ?? null);
            await this.afterClaim(c, lease, gate, sentAt);
          }),
        );
      }),
    );
  }

  private async afterClaim(
    c: Candidate,
    lease: Lease | null,
    gate: Lease | null | undefined,
    sentAt: number,
  ): Promise<void> {
    const job = this.defined.get(c.occ.job)!;
    const free = (l: Lease): WriteOp => ({ op: 'release', key: l.key, token: l.token });
    if (!lease) {
      // Someone else has (or had) it; a gate we won for it is returned at once.
      if (gate) await this.writes.submit([free(gate)]).catch(() => {});
      return;
    }
    if (lease.acquiredAt < c.occ.fireTime) {
      // Never early: the store's clock had not reached the fire time. Give it back and retry.
      await this.writes.submit([free(lease), ...(gate ? [free(gate)] : [])]);
      const source = this.sources.get(sourceKey(c.occ.job, c.occ.scheduleId));
      if (source && c.source === 'schedule')
        source.cursor = Math.min(source.cursor ?? c.occ.fireTime, c.occ.fireTime - 1);
      return;
    }
    if (gate === null) {
      await this.overlapped(job, c, lease);
      return;
    }
    // The high-water mark is raised with the run's in-flight record: until then the held claim is
    // what tells a late node that this fire time was handled, and a claim that never gets to start
    // leaves its fire time to the misfire policy. A trigger request or pending record is consumed
    // now (it shares a batch with the other claims' writes): the held claim stands for it.
    if (c.consumes !== undefined) await this.writes.submit([{ op: 'delete', key: c.consumes }]);
    this.launch(job, {
      occ: c.occ,
      lease,
      gate: gate ?? undefined,
      sentAt,
      attempt: c.attempt,
      source: c.source,
      data: c.data,
      ...(c.startWrites && { startWrites: c.startWrites }),
    });
  }

  /** The occurrence is ours but a run of the job is going elsewhere: skip it, or queue it (one pending run). */
  private async overlapped(job: Job, c: Candidate, lease: Lease): Promise<void> {
    if ((c.source === 'misfire' && job.spec.misfire === 'catch-up') || c.source === 'recover') {
      // A catch-up replay waits for the previous one, a recovery for the run holding the gate:
      // free the occurrence and try again next tick (recovery: next poll; its in-flight record stays).
      await this.writes.submit([{ op: 'release', key: lease.key, token: lease.token }]);
      return;
    }
    const highWater = this.highWaterOp(c.occ);
    // After an outage or a pause, nodes see "missed" at different moments: one may still be
    // replaying the latest missed fire time when another claims the next one on time. Skipping
    // that one for "overlapping" catch-up work would lose a fire time nobody missed, so it
    // queues behind the replay instead (one look-up, only when the gate is taken).
    const behindReplay =
      c.source === 'schedule' &&
      job.spec.overlap === 'skip' &&
      (await this.store.inspect(keys.runGate(c.occ.job, gateScope(c.occ), c.occ.shard)))?.owner.endsWith(
        REPLAY_MARK,
      ) === true;
    // Queued: with overlap 'queue', and always for a run-once misfire replay ("run once more
    // after the current run ends", as ElasticJob's misfire flag): one pending run per gate, claimed
    // by whichever node sees the gate free first. One batch: the pending record, the occurrence
    // freed for it, the mark, and the trigger request it replaces (a candidate that came from the
    // pending record keeps it, rewritten here).
    if (job.spec.overlap === 'queue' || c.source === 'misfire' || behindReplay) {
      await this.writes.submit([
        {
          op: 'put',
          key: keys.pending(c.occ.job, gateScope(c.occ), c.occ.shard),
          value: JSON.stringify({ ...c.occ, data: c.data, source: c.source }),
        },
        { op: 'release', key: lease.key, token: lease.token },
        ...(highWater ? [highWater] : []),
        ...(c.consumes !== undefined && !c.fromPending ? [{ op: 'delete' as const, key: c.consumes }] : []),
      ]);
      return;
    }
    // Skipped: recorded, marked, kept claimed ("done"), and a skipped trigger request or pending
    // run is consumed (or every poll would re-read it) — one batch.
    const at = new Date(lease.acquiredAt);
    await this.writes.submit([
      {
        op: 'put',
        key: keys.history(c.occ, 1),
        value: encodeHistory({
          ...occFields(c.occ),
          node: this.node,
          attempt: 1,
          token: lease.token,
          source: c.source,
          status: 'skipped',
          startedAt: at,
          finishedAt: at,
        }),
        ttlMs: this.retentionMs,
      },
      ...(highWater ? [highWater] : []),
      { op: 'release', key: lease.key, token: lease.token, holdUntil: c.occ.fireTime + this.doneHold(job) },
      ...(c.consumes !== undefined ? [{ op: 'delete' as const, key: c.consumes }] : []),
    ]);
    this.emit('skipped', { ...occFields(c.occ), reason: 'overlap' });
  }

  /**
   * The mark write of a run's start batch (and of a skipped or queued occurrence): only for fire
   * times of a schedule (not manual triggers) and only if higher than what this node wrote before.
   * It is a plain put, so two nodes starting out of order can lower it by a little; the occurrences
   * in between stay claimed (running, then "done" for at least an hour), which a late node checks
   * first.
   */
  private highWaterOp(occ: OccurrenceId): WriteOp | undefined {
    if (occ.scheduleId?.startsWith('manual:')) return undefined;
    const key = keys.highWater(occ.job, occ.scheduleId);
    if ((this.highWaterWritten.get(key) ?? Number.NEGATIVE_INFINITY) >= occ.fireTime) return undefined;
    this.highWaterWritten.set(key, occ.fireTime);
    return { op: 'put', key, value: String(occ.fireTime) };
  }

  private doneHold(job: Job): number {
    return Math.max(MIN_DONE_HOLD_MS, 10 * job.spec.misfireThresholdMs);
  }

  private launch(job: Job, claim: Claim): void {
    const occKey = keys.occurrence(claim.occ);
    this.runningHere.add(occKey);
    const run = executeRun(
      {
        store: this.store,
        node: this.node,
        clock: this.clock,
        logger: this.logger,
        spec: job.spec,
        handler: job.handler,
        emit: (event, payload) => this.emit(event, payload),
        writes: this.writes,
        highWater: (occ) => this.highWaterOp(occ),
        historyRetentionMs: this.retentionMs,
        doneHoldMs: this.doneHold(job),
        stopSignal: this.abandon.signal,
        handlerSettleMs: Math.min(10_000, this.stopTimeoutMs),
        storeBack: () => this.storeBack.signal,
      },
      claim,
    ).finally(() => {
      const wasFull = this.freeSlots() <= 0;
      this.running.delete(run);
      this.runningHere.delete(occKey);
      // A gate is free now: a run queued behind this one (overlap 'queue', or any run queued
      // behind a misfire replay) may start at once, so read the pending runs now rather than at
      // the next poll; likewise when this node was full and may have left due work waiting.
      // Otherwise only the timer loop needs a look (a catch-up replay may be next).
      if (wasFull || job.spec.overlap === 'queue' || claim.source === 'misfire' || this.pendingSeen)
        this.nextPollAt = 0;
      this.poke();
    });
    this.running.add(run);
  }

  /** Manual trigger requests and queued (overlap 'queue') runs of jobs this node defines. */
  private async claimRequests(requests: StoredRecord[], queued: StoredRecord[]): Promise<void> {
    const candidates: Candidate[] = [];
    for (const r of requests) {
      const req = JSON.parse(r.value) as { id: string; job: string; requestedAt: number; data?: unknown };
      const job = this.defined.get(req.job);
      if (!job) continue;
      for (const shard of this.shardsOf(job)) {
        candidates.push({
          occ: { job: req.job, scheduleId: `manual:${req.id}`, fireTime: req.requestedAt, shard },
          source: 'manual',
          data: req.data,
          attempt: 1,
          gate: job.spec.overlap !== 'allow',
          consumes: r.key,
        });
      }
    }
    // One pending record per gate (job, stored schedule, shard).
    for (const r of queued) {
      const job = this.defined.get(jobOfKey(r.key));
      if (!job || this.paused.has(job.spec.name)) continue;
      const p = JSON.parse(r.value) as OccurrenceId & { data?: unknown; source: RunSource };
      candidates.push({
        occ: {
          job: p.job,
          scheduleId: p.scheduleId ?? undefined,
          fireTime: p.fireTime,
          shard: p.shard ?? undefined,
        },
        source: p.source,
        data: p.data,
        attempt: 1,
        gate: true,
        consumes: r.key,
        fromPending: true,
      });
    }
    await this.claimAndRun(candidates);
  }

  /**
   * Recovery: an inflight record whose lease is free belongs to a run whose node died (or gave
   * up). With `recover` it is run again here with attempt + 1 and a higher token; without, it is
   * recorded as abandoned. An occurrence whose final history exists is only cleaned up.
   */
  private async recover(records: StoredRecord[], now: number): Promise<void> {
    const candidates: Candidate[] = [];
    for (const r of records) {
      const rec = JSON.parse(r.value) as InflightRecord;
      const job = this.defined.get(rec.job);
      if (!job) continue;
      // A lease cannot end before claimedAt + leaseMs (extensions only move it later): no need to
      // ask the store about a run that young. Only runs older than their lease cost a look-up.
      if (rec.claimedAt + rec.leaseMs > now) continue;
      const occ: OccurrenceId = {
        job: rec.job,
        scheduleId: rec.scheduleId,
        fireTime: rec.fireTime,
        shard: rec.shard,
      };
      // Still running (or still storing its outcome) here: its lease may have lapsed during an
      // outage, but this node knows it is not dead.
      if (this.runningHere.has(keys.occurrence(occ))) continue;
      if ((await this.store.inspect(keys.occurrence(occ))) !== null) continue;
      const last = await this.store.get(keys.history(occ, rec.attempt));
      const status = last === null ? undefined : decodeHistory(last).status;
      const final =
        status === 'succeeded' || status === 'failed' || status === 'timed-out' || status === 'skipped';
      // The dead attempt, recorded as abandoned: now (without recover), or in the same write that
      // starts the new attempt.
      const abandoned = (error?: string) =>
        encodeHistory({
          ...occFields(occ),
          node: rec.node,
          attempt: rec.attempt,
          token: rec.token,
          source: rec.source,
          status: 'abandoned',
          startedAt: new Date(rec.startedAt ?? rec.fireTime),
          finishedAt: new Date(now),
          ...(error !== undefined && { error }),
        });
      if (final || !job.spec.recover) {
        if (!final)
          await this.store.put(keys.history(occ, rec.attempt), abandoned(), { ttlMs: this.retentionMs });
        await this.store.delete(r.key);
        continue;
      }
      // A recovered run takes the overlap gate like any other run, and waits (next poll) while
      // another run of the job holds it.
      candidates.push({
        occ,
        source: 'recover',
        data: rec.data,
        attempt: rec.attempt + 1,
        gate: job.spec.overlap !== 'allow',
        startWrites: [
          {
            op: 'put',
            key: keys.history(occ, rec.attempt),
            value: abandoned(`node ${rec.node} stopped renewing its lease; recovered by ${this.node}`),
            ttlMs: this.retentionMs,
          },
        ],
      });
    }
    await this.claimAndRun(candidates);
  }
}

function historyId(h: HistoryEntry): string {
  return `${h.job}\u0000${h.scheduleId ?? ''}\u0000${h.fireTime.getTime()}\u0000${h.shard ?? ''}\u0000${h.attempt}`;
}

/** An in-flight record shown as a history entry: the attempt is running (or its node died and recovery has not run yet). */
function runningEntry(rec: InflightRecord): HistoryEntry {
  return {
    ...occFields({ job: rec.job, scheduleId: rec.scheduleId, fireTime: rec.fireTime, shard: rec.shard }),
    node: rec.node,
    attempt: rec.attempt,
    token: rec.token,
    source: rec.source,
    status: 'running',
    startedAt: new Date(rec.startedAt ?? rec.fireTime),
  };
}

/**
 * A controller whose signal every running run listens to (stop, "store is back"): one listener
 * per run, removed when the run ends, so Node's leak warning (more than 10) does not apply.
 */
function sharedController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

function sourceKey(job: string, scheduleId: string | undefined): string {
  return `${job}\u0000${scheduleId ?? ''}`;
}

/**
 * Creates a scheduler node on a store. Define jobs, then `start()`; run the same code on every
 * instance of the service.
 */
export function createScheduler(options: SchedulerOptions): Scheduler {
  return new Scheduler(options);
}
