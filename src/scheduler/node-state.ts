import { setMaxListeners } from 'node:events';
import { type Clock, StoreClock } from '../core/clock.js';
import { ExpiringKeys } from '../core/expiring-keys.js';
import { randomId } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import { INTERNAL_ABORT } from '../core/signals.js';
import type { Store } from '../store/types.js';
import type { AuditContext } from './control/audit.js';
import { CalendarCache } from './control/calendar-cache.js';
import { Spread } from './control/spread.js';
import { WriteBatcher } from './finish/write-batch.js';
import type { Candidate, GateKnowledge, Job, PauseSpan, Source, WatchedClaim } from './internal-types.js';
import { SchedulerEmitter } from './observe/events.js';
import { Telemetry } from './observe/telemetry.js';
import type { ResolvedOptions } from './options.js';
import { FleetLimits } from './run/fleet-limits.js';
import type { ReplaceableRuns } from './run/replace.js';
import type { SchedulerEvents } from './types.js';

/**
 * What one scheduler node knows and is doing, shared by the rooms (feed, due, claim, runs,
 * recover, loop): its options, its jobs and sources, the runs going on here, and the timers
 * of the loop. Every room gets the same instance. Fields that get replaced (`paused` by each
 * poll, `storeBack` by the loop, `abandon` by start, `wake.controller` before each sleep) are
 * read through it when needed, never kept.
 */
export class NodeState {
  readonly store: Store;
  readonly node: string;
  readonly concurrency: number;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Uniform in [0, 1): jitter. */
  readonly random: () => number;
  /** A fresh short id (trigger requests, schedule versions). */
  readonly newId: () => string;
  readonly pollMs: number;
  readonly retentionMs: number;
  /** Who this node's changes are recorded as, and for how long (control/audit.ts). */
  readonly audit: AuditContext;
  readonly stopTimeoutMs: number;
  readonly sweepMs: number;
  readonly storeClock: StoreClock;
  readonly events: SchedulerEmitter;
  /** Metrics, log records and spans of this node. */
  readonly telemetry: Telemetry;
  readonly defined = new Map<string, Job>();
  readonly sources = new Map<string, Source>();
  paused = new Set<string>();
  /**
   * pause()/resume() made on this node, by the `pauseEpoch` they were made at: a poll that began
   * before one of them read the store before it, and must not undo it (see `Feed.poll`).
   */
  readonly localPauses = new Map<string, { paused: boolean; epoch: number }>();
  pauseEpoch = 0;
  /** Stored schedules paused cluster-wide (`ctl|spause|<id>`), by id, as the last poll read them. */
  pausedSchedules = new Set<string>();
  /** schedules.pause()/resume() made on this node, kept as `localPauses` are. */
  readonly localSchedulePauses = new Map<string, { paused: boolean; epoch: number }>();
  /** Pauses that ended lately (`ctl|pspan|…`), by `keys.pauseSpan(job, id)`, as the last poll read them. */
  pauseSpans = new Map<string, PauseSpan>();
  /** Pauses ended by this node's resume()s, kept as `localPauses` are. */
  readonly localPauseSpans = new Map<string, { span: PauseSpan; epoch: number }>();
  readonly running = new Set<Promise<void>>();
  /** Runs whose handler has not ended yet (see freeSlots). */
  handlers = 0;
  /** Runs whose handler has ended, with their finish batch not written yet. */
  settling = 0;
  /** Occurrence keys of the runs going on this node (recovery never takes over its own runs). */
  readonly runningHere = new Set<string>();
  /** Runs of overlap-'replace' jobs going here, by gate: what a newer queued fire time aborts (run/replace.ts). */
  readonly replaceable: ReplaceableRuns = new Map();
  /** Record keys of the pages being run on this node (page recovery never takes over its own). */
  readonly pagesHere = new Set<string>();
  /** The stored schedules' change signal (`ctl|srev`) as the last poll read it. */
  scheduleRevision: string | undefined;
  /** The calendars this node read (exclusions), dropped when a poll sees `ctl|crev` change. */
  readonly calendars: CalendarCache;
  /** The calendars the defined jobs' own exclusions name (each tick makes sure they are held). */
  readonly jobCalendars = new Set<string>();
  /**
   * The due index is read again at the next tick at or after this store time (a schedule written
   * here, a job defined, a replay ended: 0; a claim granted too early: its fire time).
   */
  dueWakeAt = 0;
  /**
   * A page claim of schedule `id`'s fire time waits for the run before it (claim/prev-run.ts
   * `wait`), so the move its offer expected will not come (due/expected-moves.ts): without this, a
   * read was owed at every turn of the loop, each re-judging the claim with two reads of page
   * records — ~13 a second while a page had not started. Set by the due stage.
   */
  claimWaits: (id: string) => void = () => {};
  /** A run of a limited job ended here and left its permit for waiting work of the job: the due tick goes now. */
  permitFreed: () => void = () => {};
  /** The last poll saw queued (pending) runs. */
  pendingSeen = false;
  /**
   * The last poll saw work that waits for a free slot here and should not wait a poll interval
   * more: trigger requests, queued runs, backfill requests not yet consumed. A full node that
   * frees a slot polls at once only then (run/runs.ts): in a fan-out a full node frees slots every
   * few hundred ms, and each such poll read all of `ctl|` for nothing (43 of a node's 135 polls in
   * a four-node bench:scale fan-out).
   */
  controlWaiting = false;
  /**
   * By overlap gate key: the oldest fire time waiting behind that gate (a pending record marked
   * `wait`) as the last poll read it. An on-time claim that wins the gate while an older fire
   * time waits yields to it (Overlap.behindOlder).
   */
  waitingGates: ReadonlyMap<string, number> = new Map();
  /** Which stored schedules have backfill work, as the last poll read it (claim/gated-runs.ts). */
  gateKnowledge: GateKnowledge = { at: Number.NEGATIVE_INFINITY, schedules: new Set() };
  /**
   * Per job, the last read of its backfill requests and in-flight records made for a page whose
   * poll knowledge was stale (claim/gated-runs.ts `judgeGated`): the pages answered after it
   * within STALE_KNOWLEDGE_MS use it instead of reading again.
   */
  readonly jobGateKnowledge = new Map<string, { at: number; read: Promise<GateKnowledge> }>();
  /**
   * Jobs with a run in flight anywhere (an in-flight record) at the last poll: a gated job among
   * them is not claimed ahead (due/claim-lead.ts), since its gate would likely be refused.
   */
  jobsInFlight: ReadonlySet<string> = new Set();
  /** Backfill requests by key, and when (store time, estimated) this node first read each (claim/gated-runs.ts). */
  backfillSeen = new Map<string, number>();
  /**
   * Shard items of stored schedules claimed and never started (a lost reply, a holder that died
   * before its start record), by occurrence key: offered by the next ticks as recoveries. Unlike
   * shard 0, which carries its due entry's move (the entry is read again until it runs), these
   * are found by no later read once the entry has moved on (unanswered.ts, offerAgain).
   */
  readonly dueRecoveries = new Map<string, Candidate>();
  /**
   * Claims another node won, by occurrence key, each with the local monotonic time of its next
   * look (claim/watch.ts): until then a due entry does not offer that occurrence again
   * (due/pending-shards.ts) — the look runs it if its holder never did.
   */
  readonly watchedClaims = new Map<string, WatchedClaim>();
  /**
   * Shards of stored schedules' remembered fire times that a takeover's look found on record
   * (claim/takeovers-on-record.ts), by occurrence key, with the store time until which a due
   * entry would offer them (due/pending-shards.ts): not offered again.
   */
  readonly accountedShards = new ExpiringKeys(10_000);
  /**
   * Due keys a `catch-up` replay this node won moved its schedule's entry to, a fire time missed
   * too: the chain's next step, taken here as this node's own (due/due-scan.ts, `noteChainStep`),
   * with the store time until which it is.
   */
  readonly chainSteps = new ExpiringKeys(1_000);
  /**
   * Due keys of sharded stored schedules' missed fire times some shard of which was claimed
   * (claim/partly-claimed.ts): planned as a run of their unclaimed shards, never settled as missed.
   */
  readonly partlyClaimed = new ExpiringKeys(1_000);
  /** Aborted (and replaced) when the store answers again after failures: writes retry at once. */
  storeBack = sharedController();
  stopping: AbortController | undefined;
  readonly wake = { controller: new AbortController() };
  abandon = sharedController();
  /**
   * A claim this node won whose outcome (an overlap skip or queue) could not be stored before its
   * lease ended: asked about again at the next tick (set by claim.ts, see unanswered.ts).
   */
  lapsedClaim: (c: Candidate, sentAt: number) => void = () => {};
  /**
   * A missed fire time found held by another node that this node never claimed (misfire.ts):
   * looked at after that node's lease as a refused claim would be (claim/watch.ts, set there).
   */
  heldElsewhere: (c: Candidate) => void = () => {};
  startedAt = 0;
  nextPollAt = 0;
  lastTickAt = Number.NEGATIVE_INFINITY;
  failures = 0;
  /** The store answered a call since the loop's last failed tick (storeAnswered). */
  answeredSinceFailure = false;
  nextSweepAt = Number.POSITIVE_INFINITY;
  nextHeartbeatAt = 0;
  clockSampledAt = Number.NEGATIVE_INFINITY;
  readonly writes: WriteBatcher;
  /** The live nodes and who goes first for an occurrence (spread.ts). */
  readonly spread: Spread;
  /** Jobs' maxConcurrency and rateLimit, fleet-wide (run/fleet-limits.ts). */
  readonly limits: FleetLimits;

  constructor(options: ResolvedOptions) {
    this.store = options.store;
    this.node = options.node;
    this.concurrency = options.concurrency;
    this.logger = options.logger;
    this.clock = options.clock;
    const random = options.random;
    this.random = random ?? Math.random;
    this.newId = random ? () => idFrom(random) : () => randomId(9);
    this.pollMs = options.pollMs;
    this.retentionMs = options.retentionMs;
    this.audit = { actor: options.actor, retentionMs: options.auditRetentionMs };
    this.stopTimeoutMs = options.stopTimeoutMs;
    this.sweepMs = options.sweepMs;
    this.telemetry = new Telemetry(this.logger, this.node, options);
    this.events = new SchedulerEmitter(this.telemetry);
    this.storeClock = new StoreClock(() => this.store.now(), this.clock);
    this.writes = new WriteBatcher(this.store, this.clock, () => this.storeAnswered());
    this.spread = new Spread(this.node);
    this.calendars = new CalendarCache(this.store, (event, payload) => this.emit(event, payload));
    this.limits = new FleetLimits(
      this.store,
      this.node,
      this.clock,
      this.storeClock,
      this.random,
      (error, during) => this.emit('error', { error, during }),
    );
  }

  emit<K extends keyof SchedulerEvents>(event: K, payload: SchedulerEvents[K]): void {
    this.events.emit(event, payload);
  }

  /** Wakes the loop now (a run ended, a trigger or schedule change, stop). */
  poke(): void {
    this.wake.controller.abort(INTERNAL_ABORT);
  }

  /**
   * A store call made outside the loop was answered (a run's writes). While the loop backs off
   * after failed ticks (`failures`), that is the store back: the loop tries again now instead of
   * at the end of a back-off that grew through the outage, and a tick that fails again starts
   * its back-off over (loop.ts). Without this, a node whose partition healed slept out a back-off
   * of up to 30 s — 8 s after one lost reply just after the heal — while its runs' writes went
   * through, and the stored schedules it goes first for waited for the other nodes to count them
   * stalled (simulator, `lim,rl,mc,pages`, sim faults, seed 39: n3-2 idle from 18 s to 27 s).
   */
  storeAnswered(): void {
    if (this.failures === 0 || this.answeredSinceFailure) return;
    this.answeredSinceFailure = true;
    this.poke();
  }

  /** A pause or resume made here: in force at once, whatever a poll already under way read. */
  pauseHere(job: string, paused: boolean): void {
    this.localPauses.set(job, { paused, epoch: ++this.pauseEpoch });
    if (paused) this.paused.add(job);
    else this.paused.delete(job);
  }

  /** A schedules.pause()/resume() made here: in force at once, as {@link pauseHere}. */
  schedulePausedHere(id: string, paused: boolean): void {
    this.localSchedulePauses.set(id, { paused, epoch: ++this.pauseEpoch });
    if (paused) this.pausedSchedules.add(id);
    else this.pausedSchedules.delete(id);
  }

  /** A pause ended here (its span marker written, `key` = keys.pauseSpan): known at once, as {@link pauseHere}. */
  pauseEndedHere(key: string, span: PauseSpan): void {
    this.localPauseSpans.set(key, { span, epoch: ++this.pauseEpoch });
    this.pauseSpans.set(key, span);
  }

  freeSlots(): number {
    // Runs whose handler ended are only bookkeeping (their finish batch): up to `concurrency` of
    // them take no slot, so the next work starts while they are written; beyond that they do, so
    // a slow store cannot pile up finishes without bound.
    return this.concurrency - this.handlers - Math.max(0, this.settling - this.concurrency);
  }
}

/**
 * A controller whose signal every running run listens to (stop, "store is back"): one listener
 * per run, removed when the run ends, so Node's leak warning (more than 10) does not apply.
 */
export function sharedController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** A 12-character url-safe id drawn from an injected random source (as long as `randomId(9)`'s). */
function idFrom(random: () => number): string {
  let id = '';
  for (let i = 0; i < 12; i++) id += ID_ALPHABET[Math.floor(random() * 64) % 64];
  return id;
}
