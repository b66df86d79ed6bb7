import { linkSignals } from '../../core/signals.js';
import { doneHold, type HighWater } from '../claim/high-water.js';
import type { Job } from '../internal-types.js';
import { keys } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { type BatchHooks, runPageBatch } from './page-batch.js';
import { leanPageRun, pageRunWay, runPageItem } from './page-item-run.js';
import { replaceable } from './replace.js';
import { type Claim, executeRun, type RunDeps } from './run.js';
import type { RunBook } from './run-book.js';

/** Starts claimed occurrences on this node and keeps track of them (free slots, recovery, stop). */
export class Runs {
  constructor(
    private readonly state: NodeState,
    private readonly highWater: HighWater,
  ) {}

  /** The runs to halt when stop() gives up on them, with the abandon signal they wait on. */
  private stopHooks: { signal: AbortSignal; fns: Set<(reason: unknown) => void> } | undefined;

  /**
   * Calls `fn` when the current `abandon` signal aborts (at once if it has), until the returned
   * function is called. One listener on the signal serves every run (start() replaces it).
   */
  private onStop(fn: (reason: unknown) => void): () => void {
    const signal = this.state.abandon.signal;
    if (signal.aborted) {
      fn(signal.reason);
      return () => {};
    }
    if (this.stopHooks?.signal !== signal) {
      const fns = new Set<(reason: unknown) => void>();
      signal.addEventListener('abort', () => {
        for (const f of fns) f(signal.reason);
      });
      this.stopHooks = { signal, fns };
    }
    const { fns } = this.stopHooks;
    fns.add(fn);
    return () => fns.delete(fn);
  }

  /** Each job's RunDeps, shared by its runs (a closure-laden object per run was ~0.7 KB in flight). */
  private readonly deps = new WeakMap<Job, RunDeps>();

  private depsOf(job: Job): RunDeps {
    const s = this.state;
    const kept = this.deps.get(job);
    // start() after stop() makes a new abandon signal; define() makes a new Job (spec and handler
    // are compared all the same, as is tracing: cheap, and nothing stale can be kept).
    if (
      kept &&
      kept.stopSignal === s.abandon.signal &&
      kept.spec === job.spec &&
      kept.handler === job.handler &&
      kept.tracing === s.telemetry.tracing
    )
      return kept;
    const deps: RunDeps = {
      store: s.store,
      node: s.node,
      clock: s.clock,
      random: s.random,
      logger: s.logger,
      spec: job.spec,
      handler: job.handler,
      emit: (event, payload) => s.emit(event, payload),
      started: (job, source, lateMs, event) => s.events.started(job, source, lateMs, event),
      succeeded: (job, durationMs, event) => s.events.succeeded(job, durationMs, event),
      writes: s.writes,
      highWater: (occ) => this.highWater.highWaterOp(occ),
      historyRetentionMs: s.retentionMs,
      doneHoldMs: doneHold(job),
      stopSignal: s.abandon.signal,
      onStop: (fn) => this.onStop(fn),
      handlerSettleMs: Math.min(10_000, s.stopTimeoutMs),
      replaceable: (occ) => replaceable(s.replaceable, occ),
      storeBack: () => s.storeBack.signal,
      storeNow: () => s.storeClock.sample(),
      ...(job.spec.limits?.rate && {
        // A run waiting for its start in the window has not started: stop() ends the wait at once
        // (the run ends abandoned, recovery runs it elsewhere). It waited out stopTimeout before
        // (30 s by default, a whole grace period of most orchestrators) for a handler never called.
        rateStart: async (signal: AbortSignal, start: number, count?: number) => {
          const stopping = s.stopping?.signal;
          if (stopping === undefined) return s.limits.rateStart(job.spec, signal, start, count);
          const either = linkSignals([signal, stopping]);
          try {
            return await s.limits.rateStart(job.spec, either.signal, start, count);
          } finally {
            either.dispose();
          }
        },
      }),
      tracing: s.telemetry.tracing,
    };
    this.deps.set(job, deps);
    return deps;
  }

  /**
   * Starts a run of a won claim; `notStarted` is called if its start record could not be stored
   * before the lease ended (nothing of it is on record, and every other node was refused it),
   * once that run has ended.
   * `book`: how the run keeps its claim and records itself (a page's run: the page's).
   */
  launch(job: Job, claim: Claim, notStarted?: () => void, book?: RunBook): Promise<void> {
    const s = this.state;
    const occKey = keys.occurrence(claim.occ);
    s.runningHere.add(occKey);
    s.handlers++;
    s.telemetry.metrics.running.inc();
    // A run of a limited job holds one of its fleet permits until its handler ends (fleet-limits.ts).
    const limited = s.limits.limited(job.spec);
    if (limited) s.limits.started(job.spec);
    let ended = false;
    const handlerEnded = () => {
      if (ended) return;
      ended = true;
      this.handlerSlotFreed(job, limited);
    };
    const deps = this.depsOf(job);
    // Told only once the run has ended, not when its start failed: the run still frees its claim
    // then (its abandon writes, run.ts), and until it ends the occurrence counts as running here.
    // An unanswered claim found held by this node and running here is not adopted and not offered
    // again (unanswered.ts), so a tick in between dropped it — held, then freed, never run
    // (test/faults-crash.test.ts, "a claim won whose answer came after its own lease": once in
    // CI, 3 of ~53 looped runs under load, the next tick 6 ms after the failed start).
    let unstarted = false;
    const lapsed = () => {
      unstarted = true;
    };
    const hooks = { handlerEnded, ...(notStarted && { notStarted: lapsed }) };
    // A page's item without retries, timeout, `replace` or rate limit: the lean way (page-item-run.ts).
    const execution =
      book !== undefined && leanPageRun(deps, claim, book)
        ? runPageItem(deps, claim, hooks, book)
        : executeRun(deps, claim, hooks, book);
    const run = execution.finally(() => {
      s.running.delete(run);
      this.runEnded(job, claim, occKey, limited, ended);
      if (unstarted) notStarted?.();
    });
    s.running.add(run);
    return run;
  }

  /**
   * A run's handler ended: its slot (and its fleet permit, `limited`) is free; a node that was
   * full looks for due work at once, and polls at once if the last poll saw control work waiting
   * for a slot (NodeState.controlWaiting). Its end (the outcome stored) is counted apart (`settling`).
   */
  private handlerSlotFreed(job: Job, limited: boolean): void {
    const s = this.state;
    // A permit kept here for waiting work of the job (run/limit-spare.ts): the due tick goes now.
    const spare = limited && s.limits.ended(job.spec);
    const wasFull = s.freeSlots() <= 0;
    s.handlers--;
    s.settling++;
    const slotFreed = wasFull && s.freeSlots() > 0;
    if (spare) s.permitFreed();
    if (slotFreed && s.controlWaiting) s.nextPollAt = 0;
    if (spare || slotFreed) s.poke();
  }

  /**
   * A run ended (its outcome stored or given up on): its slot, if its handler had not freed it
   * (`handlerWasEnded`), and its bookkeeping go. A gate is free now: a run queued behind this one
   * (overlap 'queue'/'queue-all', or any run queued behind a misfire replay) may start at once, so
   * the pending runs are read now rather than at the next poll; likewise when this node was full
   * and its last poll saw control work waiting for a slot. Otherwise only the timer loop needs a
   * look (a catch-up replay may be next).
   */
  private runEnded(job: Job, claim: Claim, occKey: string, limited: boolean, handlerWasEnded: boolean): void {
    const s = this.state;
    s.telemetry.metrics.running.dec();
    const wasFull = s.freeSlots() <= 0;
    if (handlerWasEnded) s.settling--;
    else {
      s.handlers--;
      if (limited && s.limits.ended(job.spec)) s.permitFreed();
    }
    s.runningHere.delete(occKey);
    const queues = job.spec.overlap !== 'skip' && job.spec.overlap !== 'allow';
    if ((wasFull && s.controlWaiting) || queues || claim.replay || s.pendingSeen) s.nextPollAt = 0;
    // A stored schedule's replay ended: its next replay (catch-up) or the on-time entry queued
    // behind it may be claimable now.
    if (claim.replay && claim.occ.scheduleId !== undefined) s.dueWakeAt = 0;
    s.poke();
  }

  /**
   * Starts runs of a page that start together (page-starts.ts `launchAtStarts`: at the claim, or
   * in one round of runs claimed ahead): together, the lean way (page-batch.ts), those that may
   * take it (`leanPageRun`), the others one by one. Keeps each run's slot and bookkeeping as
   * `launch` does, in one pass. Resolves when every one of these runs has ended.
   */
  launchPage(job: Job, claims: readonly Claim[], book: RunBook): Promise<void> {
    const deps = this.depsOf(job);
    // One pass: each claim's way judged once (its lateness reads the clock).
    const ways: Record<ReturnType<typeof pageRunWay>, Claim[]> = { lean: [], late: [], alone: [] };
    for (const c of claims) ways[pageRunWay(deps, c, book)].push(c);
    if (ways.late.length === 0 && ways.alone.length === 0)
      return this.launchBatch(job, deps, ways.lean, book);
    return Promise.all([
      this.launchBatch(job, deps, ways.lean, book),
      this.launchBatch(job, deps, ways.late, book, true),
      ...ways.alone.map((c) => this.launch(job, c, undefined, book)),
    ]).then(() => {});
  }

  /** `late`: the runs ask the rate window for their starts first, together (page-item-run.ts `pageRunWay`). */
  private launchBatch(
    job: Job,
    deps: RunDeps,
    claims: readonly Claim[],
    book: RunBook,
    late = false,
  ): Promise<void> {
    if (claims.length === 0) return Promise.resolve();
    const s = this.state;
    const n = claims.length;
    const occKeys = claims.map((c) => keys.occurrence(c.occ));
    for (const k of occKeys) s.runningHere.add(k);
    s.handlers += n;
    s.telemetry.metrics.running.inc(n);
    const limited = s.limits.limited(job.spec);
    if (limited) for (let i = 0; i < n; i++) s.limits.started(job.spec);
    // 1: its handler ended (slot freed), 2: the run ended.
    const state = new Uint8Array(n);
    const hooks: BatchHooks = {
      handlerEnded: (k) => {
        if (state[k] !== 0) return;
        state[k] = 1;
        this.handlerSlotFreed(job, limited);
      },
      ended: (k) => {
        if (state[k] === 2) return;
        const handlerWasEnded = state[k] === 1;
        state[k] = 2;
        this.runEnded(job, claims[k]!, occKeys[k]!, limited, handlerWasEnded);
      },
    };
    const run = runPageBatch(deps, claims, hooks, book, late);
    s.running.add(run);
    void run.finally(() => s.running.delete(run));
    return run;
  }
}
