import { hostname } from 'node:os';
import { OncelyError } from '../../core/errors.js';
import { packageVersion } from '../../core/version.js';
import type { StoredRecord, WriteOp } from '../../store/types.js';
import { MAX_BATCH } from '../../store/validate.js';
import { CONSUMED, gateKnowledge } from '../claim/gated-runs.js';
import type { PauseSpan } from '../internal-types.js';
import type { JobSpec } from '../job-options.js';
import { controlKind, jobOfKey, keys, unesc } from '../keys.js';
import type { NodeState } from '../node-state.js';
import type { PageRecovery } from '../recover/page-recovery.js';
import type { Recovery } from '../recover/recover.js';
import { definitionChanges } from './audit.js';
import type { Requests } from './requests.js';

/** The store clock is re-read at least this often (and after every failure). */
const CLOCK_RESAMPLE_MS = 10_000;
/** A poll reads at most this many control records (reported when there are more). */
const MAX_CONTROL_RECORDS = 100_000;

type ControlKind =
  | 'pause'
  | 'spause'
  | 'pspan'
  | 'srev'
  | 'crev'
  | 'trig'
  | 'bf'
  | 'pending'
  | 'run'
  | 'page';

/** The control records a poll acts on, by kind (`controlKind`), in one pass; other kinds are ignored. */
function byKind(records: StoredRecord[]): Record<ControlKind, StoredRecord[]> {
  const out: Record<ControlKind, StoredRecord[]> = {
    pause: [],
    spause: [],
    pspan: [],
    srev: [],
    crev: [],
    trig: [],
    bf: [],
    pending: [],
    run: [],
    page: [],
  };
  for (const r of records) {
    const kind = controlKind(r.key);
    if (Object.hasOwn(out, kind)) out[kind as ControlKind].push(r);
  }
  return out;
}

/** What changed in the cluster — pauses, stored schedules (their change signal), triggers, queued and orphaned runs — and this node's own records in it (heartbeat, job registry). */
export class Feed {
  /** The control records passed MAX_CONTROL_RECORDS, reported once. */
  private overflowReported = false;

  /** The last read of the heartbeats changed the live list: read them again at the next poll. */
  private liveUnsettled = false;

  constructor(
    private readonly state: NodeState,
    private readonly requests: Requests,
    private readonly recovery: Recovery,
    private readonly pages: PageRecovery,
  ) {}

  /**
   * Reads cluster state — pauses, the stored schedules' change signal, trigger requests, queued runs, runs in flight
   * (for recovery) — in one scan of the `ctl|` records; re-reads the store clock and writes the
   * heartbeat only every few polls. An idle node costs about 1.4 round trips per poll interval.
   */
  async poll(): Promise<void> {
    const s = this.state;
    if (s.failures > 0 || s.clock.monotonic() - s.clockSampledAt >= CLOCK_RESAMPLE_MS) {
      await s.storeClock.sample();
      s.clockSampledAt = s.clock.monotonic();
    }
    const now = s.storeClock.estimate();
    s.nextPollAt = now + s.pollMs;
    const epoch = s.pauseEpoch;
    const control = byKind(await this.readControl());
    s.paused = this.pausedNow(
      control.pause.map((r) => jobOfKey(r.key)),
      epoch,
    );
    if (control.spause.length > 0 || s.pausedSchedules.size > 0 || s.localSchedulePauses.size > 0)
      s.pausedSchedules = withLocal(
        new Set(control.spause.map((r) => idOfPauseKey(r.key))),
        s.localSchedulePauses,
        epoch,
      );
    if (control.pspan.length > 0 || s.pauseSpans.size > 0 || s.localPauseSpans.size > 0)
      s.pauseSpans = spansNow(control.pspan, s.localPauseSpans, epoch);
    s.scheduleRevision = control.srev[0]?.value;
    // Calendars changed: every one held here is read again when next needed (calendar-cache.ts).
    s.calendars.seen(control.crev[0]?.value);
    const beat = now >= s.nextHeartbeatAt;
    if (beat) {
      await this.heartbeat(now);
      s.nextHeartbeatAt = now + this.heartbeatMs();
    }
    // The other nodes' heartbeats are read when this node writes its own: the live list that
    // spreads the work (spread.ts) changes at heartbeat granularity, for one scan per beat. A read
    // that found the list changed is followed by another at the next poll, until one finds it as
    // it was: nodes started together each write their heartbeat at their own first poll, and one
    // whose first read came before the others' writes took itself for alone — preferred itself for
    // every occurrence and claimed them all at the fire time, as the others claimed their shares —
    // until its next beat, up to 5 s later (three nodes started together, 1,000 jobs: the first
    // fire time spread 89/423/488). A node that joins later is likewise settled on at once.
    if (beat || this.liveUnsettled)
      this.liveUnsettled = s.spread.update(await s.store.scan(keys.nodePrefix, { limit: 10_000 }), now);
    const { pending, run: inflight, trig, bf } = control;
    s.pendingSeen = pending.length > 0;
    s.controlWaiting = s.pendingSeen || trig.length > 0 || bf.some((r) => r.value !== CONSUMED);
    s.gateKnowledge = gateKnowledge(bf, inflight, now);
    s.jobsInFlight = jobsOf(inflight);
    await this.requests.claimRequests(trig, pending, inflight, now, bf);
    await this.recovery.recover(inflight, now);
    if (control.page.length > 0) await this.pages.recover(control.page, now);
    if (now >= s.nextSweepAt) {
      // Expired history, heartbeats, trigger requests and "done" occurrence claims are invisible
      // but stay stored until swept: every node deletes a bounded batch now and then.
      s.nextSweepAt = now + s.sweepMs;
      await s.store.sweep({ limit: 1000 }).catch((err) => s.emit('error', { error: err, during: 'sweep' }));
    }
  }

  /**
   * The paused jobs as read, with this node's own pause()/resume() calls made since the read
   * began (`epoch`) still in force: the read may predate them. Older ones are in what was read.
   */
  private pausedNow(read: string[], epoch: number): Set<string> {
    return withLocal(new Set(read), this.state.localPauses, epoch);
  }

  /** Every `ctl|` record, in pages of 10,000 (at most MAX_CONTROL_RECORDS). */
  private async readControl(): Promise<StoredRecord[]> {
    const all: StoredRecord[] = [];
    for (;;) {
      const last = all.at(-1)?.key;
      const page = await this.state.store.scan(keys.controlPrefix, {
        limit: 10_000,
        ...(last !== undefined && { after: last }),
      });
      all.push(...page);
      if (page.length < 10_000) return all;
      if (all.length >= MAX_CONTROL_RECORDS) {
        if (!this.overflowReported)
          this.state.emit('error', {
            error: new OncelyError(
              'INTERNAL',
              `more than ${MAX_CONTROL_RECORDS} control records (trigger requests, queued and in-flight runs): a poll reads the first ${MAX_CONTROL_RECORDS}`,
            ),
            during: 'poll',
          });
        this.overflowReported = true;
        return all;
      }
    }
  }

  /** Heartbeats go out every 5 polls (at most every 5 s); the record lives 3 intervals (at least 15 s). */
  private heartbeatMs(): number {
    return Math.min(5 * this.state.pollMs, 5_000);
  }

  /** The node is stopping: other nodes stop preferring it at their next read of the heartbeats. */
  async announceStopping(): Promise<void> {
    await this.heartbeat(this.state.storeClock.estimate(), true);
  }

  private async heartbeat(now: number, stopping = false): Promise<void> {
    const s = this.state;
    const info = {
      id: s.node,
      host: hostname(),
      pid: process.pid,
      version: packageVersion(),
      startedAt: s.startedAt,
      lastSeen: now,
      jobs: [...s.defined.keys()],
      beatMs: this.heartbeatMs(),
      ...(stopping && { stopping: true }),
    };
    await s.store.put(keys.node(s.node), JSON.stringify(info), {
      ttlMs: Math.max(3 * this.heartbeatMs(), 15_000),
    });
  }

  /**
   * Records the jobs' definitions in the store (`job|<name>`), for `jobs()`, the CLI and the
   * dashboard: one apply batch per MAX_BATCH jobs (start() of a node with 1,000 jobs made 2,000
   * concurrent round trips here — a clock read and a put per job), stamped with the store clock's
   * estimate (start() has just sampled it; read from the store only if no sample was taken yet).
   */
  async registerJobs(specs: readonly JobSpec[]): Promise<void> {
    const s = this.state;
    const updatedAt = s.storeClock.sampled() ? Math.round(s.storeClock.estimate()) : await s.store.now();
    const ops: WriteOp[] = specs.map((spec) => ({
      op: 'put',
      key: keys.job(spec.name),
      value: JSON.stringify({
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
          // Only when set (records of jobs without one stay as they were): read by next() elsewhere.
          ...(spec.jitter && { jitter: spec.jitter }),
          // Likewise (ranges as ISO-8601 strings): next() elsewhere skips what it excludes.
          ...(spec.exclude && { exclude: spec.exclude.source }),
          // startAt/endAt (epoch ms), only when set: next() and the job list bound the trigger by them.
          ...(spec.bounds && spec.bounds),
        },
        definedBy: s.node,
        updatedAt,
      }),
    }));
    // Each batch with an audit entry per job whose recorded definition changed (control/audit.ts),
    // found by one read of the batch's records just before; in the same apply when they fit, else
    // in applies right after it (a start with many new jobs: one apply of records per MAX_BATCH).
    for (let at = 0; at < ops.length; at += MAX_BATCH) {
      const batch = ops.slice(at, at + MAX_BATCH);
      const before = await s.store.getMany(batch.map((op) => op.key));
      const entries = definitionChanges(batch, before, updatedAt, s.audit);
      if (batch.length + entries.length <= MAX_BATCH) await s.store.apply([...batch, ...entries]);
      else {
        await s.store.apply(batch);
        for (let e = 0; e < entries.length; e += MAX_BATCH - 2)
          await s.store.apply(entries.slice(e, e + MAX_BATCH - 2));
      }
    }
  }
}

/**
 * `read` (names or ids paused as a poll read them), with this node's own pause and resume calls
 * made since the read began (`epoch`) still in force: the read may predate them. Older ones are
 * in what was read, and are dropped from `local`.
 */
function withLocal(
  read: Set<string>,
  local: Map<string, { paused: boolean; epoch: number }>,
  epoch: number,
): Set<string> {
  for (const [name, change] of local) {
    if (change.epoch <= epoch) local.delete(name);
    else if (change.paused) read.add(name);
    else read.delete(name);
  }
  return read;
}

/** The stored schedule id of a `ctl|spause|<id>` key. */
function idOfPauseKey(key: string): string {
  return unesc(key.slice(keys.schedulePausePrefix.length));
}

/** The pause span markers as read (control/pause-span.ts), with those this node wrote since the read began. */
function spansNow(
  read: readonly StoredRecord[],
  local: Map<string, { span: PauseSpan; epoch: number }>,
  epoch: number,
): Map<string, PauseSpan> {
  const out = new Map<string, PauseSpan>();
  for (const r of read) {
    try {
      const span = JSON.parse(r.value) as PauseSpan;
      if (typeof span.since === 'number' && typeof span.until === 'number') out.set(r.key, span);
    } catch {
      // Not a marker this build wrote: it expires.
    }
  }
  for (const [key, change] of local) {
    if (change.epoch <= epoch) local.delete(key);
    else out.set(key, change.span);
  }
  return out;
}

/** The jobs of in-flight records (`ctl|run|<job>|…`). */
function jobsOf(inflight: readonly StoredRecord[]): Set<string> {
  const jobs = new Set<string>();
  for (const r of inflight) jobs.add(jobOfKey(r.key));
  return jobs;
}
