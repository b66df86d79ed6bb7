import { type FireSpan, fireSpan } from '../../schedule/fire-span.js';
import { nextFireTimes } from '../../schedule/fire-times.js';
import { getManyInSlices } from '../../store/get-many.js';
import type { WriteOp } from '../../store/types.js';
import { doneHold, type HighWater, heldNotDone } from '../claim/high-water.js';
import { pausedPart, pausedSpanEntry } from '../control/pause-span.js';
import { spreadGrace } from '../control/spread.js';
import { type Job, type Source, shardsOf } from '../internal-types.js';
import { gateScope, keys } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { sourceStart } from './jittered.js';
import { emitMisfired, emitPausedSpan } from './misfire-events.js';
import { onRecord } from './misfire-record.js';
import { endFence, type Fenced, fenceSkips } from './skip-fence.js';

/**
 * How many of the latest missed fire times are checked for a claim still held (beyond the
 * `catchUpLimit` that catch-up keeps): one look-up each, so bounded, however long the outage.
 */
const HELD_LOOKBACK = 100;
/**
 * How many of the latest fire times a node goes past because the high-water mark is beyond them
 * are checked for a claim held and not yet "done": the fire times the fleet claimed on time since
 * another node claimed its replay (16 s of a 1 s job).
 */
const PASSED_LOOKBACK = 16;
/** How many of the latest fire times below the mark a sharded job's node looks at for shards left (see `belowMark`). */
const PARTIAL_LOOKBACK = 4;

/**
 * Missed fire times (nobody claimed them within misfireThreshold) and the misfire policies. A
 * stretch of missed fire times is handled as one span — its first, its count and its latest few
 * — never one by one, so a week-long outage costs what a minute-long one does, and run-once
 * replays exactly one fire time however many were missed.
 */
export class Misfires {
  constructor(
    private readonly state: NodeState,
    private readonly highWater: HighWater,
  ) {}

  /**
   * Handles the source's fire times before `missedBefore` (now − misfireThreshold): skip them, or
   * pick the one to replay (run-once: the latest; catch-up: the oldest of the latest
   * `catchUpLimit`). Occurrences another node handled (high-water mark, or a claim still held) are
   * not missed. Moves the cursor past what is settled (catch-up: to just before its replay, which
   * is offered again each tick until claimed); returns the fire time to replay, if any — `null`
   * when a catch-up replay waits for the one before it (`unclaimed`).
   */
  async handle(job: Job, source: Source, missedBefore: number): Promise<number | undefined | null> {
    const s = this.state;
    const { misfire, catchUpLimit } = job.spec;
    const cursor = source.cursor!;
    // Every missed fire time is at most this (fire times are whole milliseconds).
    const settled = Math.ceil(missedBefore) - 1;
    const hwmKey = keys.highWater(source.job, source.scheduleId);
    const stored = await s.store.get(hwmKey);
    const hwm = stored === null ? Number.NEGATIVE_INFINITY : Number(stored);
    const lookback = (misfire === 'catch-up' ? catchUpLimit : 1) + HELD_LOOKBACK;
    if (hwm > cursor) await this.belowMark(job, source, cursor, hwm, missedBefore);
    const span = fireSpan(source.trigger, Math.max(cursor, hwm), missedBefore, lookback);
    const found = span && (await this.unclaimed(job, source, span, missedBefore));
    // A catch-up replay still going or being given back (see `unclaimed`): the next waits, the
    // cursor where it is, and so do the on-time ones (missed by then, replayed in order).
    if (found === null) return null;
    let open = found;
    // What the policy skips is claimed first (skip-fence.ts), so that no claim of it can come
    // after the skip is said; a fire time another node's claim took first is that node's, with
    // the ones before it (as one found held), and the policy is applied to the rest.
    let fence: Fenced | undefined;
    for (let round = 0; open !== undefined; round++) {
      const last = skipsUpTo(job, open);
      if (last === undefined) break;
      fence = await fenceSkips(
        s,
        job,
        source,
        open.tail.filter((f) => f <= last),
      );
      if ('held' in fence) break;
      await endFence(s, job, fence.granted, fence.sentAt, false);
      const taken = Math.max(...fence.refused);
      // Every fire time refused is the holder's — watched (every shard), as a refused claim is:
      // a holder that is itself a fence whose answer was lost gives its claims back unsaid
      // (skip-fence.ts, `forget`), and nobody handled them after (mix5 seed 508: `m5lim@+7 s`
      // and `+8 s`, every shard, below the mark of a later replay by then).
      for (const f of fence.refused) this.watch(job, source, f);
      fence = undefined;
      if (shardsOf(job).length > 1) await this.belowMark(job, source, taken - 1, taken, missedBefore);
      const tail = open.tail.filter((f) => f > taken);
      open = tail.length === 0 ? undefined : { first: tail[0]!, count: tail.length, tail };
      // Raced again and again: left as it is (the cursor too) for the next tick.
      if (open !== undefined && round >= 2) return undefined;
    }
    if (!open) {
      source.cursor = Math.max(cursor, settled);
      return undefined;
    }
    const o = open;
    const latest = o.tail.at(-1)!;
    // What is skipped (one event for all of it) and what is replayed (one event) are emitted
    // together, so that a log can say it in one line; then the mark moves past the skipped ones.
    let skipped: number | undefined;
    let replay: number | undefined;
    let paused: WriteOp | undefined;
    const skip = (last: number, count: number | undefined) => {
      this.emit(source, 'skipped', o.first, last, count);
      skipped = last;
      // The part of them a pause left (control/pause-span.ts; those missed before it are the
      // plain misfire just said): one `paused` entry, keyed by that part's first fire time — no
      // claim settles it here, so nodes handling it at once write the same key.
      const { job: name, scheduleId, trigger } = source;
      const of = { job: name, scheduleId, trigger };
      const part = pausedPart(s, of, { first: o.first, last, count }, job.spec.misfireThresholdMs);
      if (part) {
        const occ = { job: name, scheduleId, fireTime: part.first, shard: shardsOf(job)[0] };
        const span = { last, count: part.count };
        paused = pausedSpanEntry(s, occ, span, 0, Math.round(s.storeClock.estimate()));
        emitPausedSpan(s, occ, span);
      }
    };
    // Held "done" as it is said: the write goes out in this turn, with the event (write-batch.ts),
    // so a crash cannot come between them; not waited for (the claims hold them meanwhile; a
    // failed write is retried until they would lapse — then recovered late, never lost).
    if (fence && 'held' in fence) void endFence(s, job, fence.held, fence.sentAt, true);
    if (misfire === 'skip') {
      skip(latest, o.count);
    } else if (misfire === 'run-once') {
      // The tail holds every open fire time, or more than one: the one before the latest is in it.
      if (o.tail.length > 1) skip(o.tail.at(-2)!, o.count === undefined ? undefined : o.count - 1);
      replay = latest;
    } else {
      // catch-up: keep the latest catchUpLimit, replay the oldest of them; the gate makes replays
      // sequential across the fleet, and the cursor stays before that replay until it is claimed
      // (a later tick finds it held and moves on to the next).
      let kept = o.tail;
      if (o.count === undefined || o.count > catchUpLimit) {
        const excess = o.tail.length - catchUpLimit;
        skip(o.tail[excess - 1]!, o.count === undefined ? undefined : o.count - catchUpLimit);
        kept = o.tail.slice(excess);
      }
      replay = kept[0]!;
    }
    if (replay !== undefined) this.announce(source, replay);
    if (paused !== undefined) await s.store.apply([paused]);
    if (skipped !== undefined) await this.highWater.raiseHighWater(hwmKey, skipped);
    // Only now, once what was skipped is on record: a write that fails leaves the cursor where it
    // was, and the next tick handles the span again — moved first, the replay this call returns
    // was lost with the throw (simulator, fleet limits seed 43: a node's `get hwm` request lost).
    source.cursor = misfire === 'catch-up' ? replay! - 1 : Math.max(cursor, settled);
    return replay;
  }

  /**
   * The part of the span nobody claimed: after the latest fire time of its tail whose claim is
   * still held (running, or "done"). A node that claimed that one handled the ones before it too
   * (it handles missed fire times before it claims on-time ones; catch-up replays oldest first),
   * so only the tail is looked up, however long the span — but under catch-up a held one before
   * it may still be given back or lost with its holder: those are watched too. `null`: under
   * catch-up, the latest held one is still to be settled — the next replay waits for it.
   */
  private async unclaimed(
    job: Job,
    source: Source,
    span: FireSpan,
    missedBefore: number,
  ): Promise<FireSpan | undefined | null> {
    const s = this.state;
    const shard = shardsOf(job)[0];
    const scope = gateScope(source);
    const [held, queued] = await Promise.all([
      Promise.all(
        span.tail.map((fireTime) =>
          s.store.inspect(
            keys.occurrence({ job: source.job, scheduleId: source.scheduleId, fireTime, shard }),
          ),
        ),
      ),
      // Queued behind its gate: claimed, its occurrence freed for the pending record's reader —
      // and the mark, a plain put, may have been lowered below it since by a node that queued or
      // started an older fire time a moment later (high-water.ts). Taken for missed, a queued
      // replay was settled here as part of a `paused` span while it waited, and the older replay
      // it had superseded was on record as superseded by a fire time that never ran (sweep
      // `jqa,jrep,jrl` mix5, seed 155: `jrl@+10 s`, `+11 s`). One getMany, only for missed ones.
      // In slices: under catch-up the tail holds up to catchUpLimit (10,000) fire times.
      getManyInSlices(
        s.store,
        span.tail.map((fireTime) => keys.pending(source.job, scope, shard, fireTime)),
      ),
    ]);
    let lastHeld = held.length - 1;
    while (lastHeld >= 0 && held[lastHeld] === null && queued[lastHeld] === null) lastHeld--;
    if (lastHeld < 0) return span;
    // Its holder may die before it starts the run (no in-flight record then, and every node past
    // it): looked at after the holder's lease, as a refused claim is. Nodes that claimed it were
    // refused and watch it already; this node did not claim it — it waited for a fleet permit
    // (run/fleet-limits.ts) while the holder had it (simulator seed 17 of the fleet limits sweep).
    // A queued one is the pending record's reader's (control/requests.ts); a sharded job's other
    // shards of it were not claimed with it (a limited job claims a shard at a time): they are
    // completed as for a fire time below the mark (simulator, same mix, sim seed 59).
    const watch = (fireTime: number) => this.watch(job, source, fireTime);
    const last = span.tail[lastHeld]!;
    if (held[lastHeld] !== null) watch(last);
    else if (shardsOf(job).length > 1) await this.belowMark(job, source, last - 1, last, missedBefore);
    // A held one before it was not always handled by that one's holder. Catch-up: several nodes
    // replay at once, each the oldest it finds unheld, and one may be a claim about to be given
    // back (its gate held) or whose holder dies (simulator: three jobs, pauses, catch-up; its
    // holder crashed, its release never sent). Any policy: a node claims a fire time it queued
    // before the pause beside its replay after it (one job, run-once, two pauses, seed 579: the
    // holder of +6 s and +7 s crashed; +7 s was watched, +6 s lost). Each one not "done" is looked
    // at after its lease too (no more reads: its lease is in hand).
    for (let i = 0; i < lastHeld; i++) {
      const lease = held[i];
      if (lease && heldNotDone(lease, span.tail[i]!, job)) watch(span.tail[i]!);
    }
    // Catch-up replays one at a time, oldest first: while the latest held one is a claim still to
    // be settled (a replay going, or one about to be given back because its gate was taken), the
    // next is not replayed yet — replayed beside it, the later one took the gate first as often
    // as not, and the held one, given back, lost the gate to each later replay in turn: +19 s,
    // +20 s and +21 s ran while +18 s waited until the end (simulator, `m5pages,tick,m5lim,m5q`
    // mix5, seed 74). Only under overlap `skip`, where a replay refused its gate is given back:
    // under `queue` it is queued behind the run (requests.ts starts it when the gate frees, sooner
    // than a next tick would decide it: waiting here slowed a backlog — simulator, a slow machine,
    // 6 of 60 seeds lost a fire time of another job at the end); `allow` shares no gate.
    if (
      job.spec.misfire === 'catch-up' &&
      job.spec.overlap === 'skip' &&
      held[lastHeld] !== null &&
      heldNotDone(held[lastHeld]!, last, job)
    )
      return null;
    const tail = span.tail.slice(lastHeld + 1);
    return tail.length === 0 ? undefined : { first: tail[0]!, count: tail.length, tail };
  }

  /**
   * The latest missed fire times after this node's cursor and at or below the high-water mark —
   * this node goes past them unclaimed — looked at once, in one batch of inspects:
   *
   * - Watched (claim/watch.ts): their claims held and not "done" — shard 0 of the latest
   *   {@link PASSED_LOOKBACK}, every shard of a sharded job's latest {@link PARTIAL_LOOKBACK}. One
   *   may be another node's replay whose start or queue write was lost before that node died: the
   *   nodes that saw it held at their own misfire handling watch it, but when every one of them
   *   died too, a node that came after the on-time runs raised the mark past it was the last that
   *   could (simulator: one job every 1 s, run-once, two pauses, the fault mix, seed 167 of 300:
   *   +7 s never ran; 7 of 900 seeds without this, seeds 305 and 324 kept in
   *   test/simulate-replay-watch.test.ts). Or a shard whose holder crashed as it wrote the other
   *   shards' waiting records (three jobs on a slow machine, the fault mix, seed 34).
   * - Completed (a sharded job's latest {@link PARTIAL_LOOKBACK}): of a fire time some of whose
   *   shards are held, those nobody holds are queued here to be claimed (as on time, their
   *   preferred nodes first). Some shards of one fire time can start while the rest are dropped:
   *   claimed ahead by nodes that had not seen a pause yet, while the others had and dropped
   *   theirs (queue-undo.ts, `dropOnTime`); the mark then covers that fire time — or a replay's
   *   raised it past — and every misfire scan starts after it (a job of 3 shards every 2 s paused
   *   at one of its fire times: 7 of 20 seeds lost a shard of it). A fire time none of whose
   *   shards is held is left alone — the mark passed it as skipped (a misfire's or a pause's
   *   span) — unless a claim of it is on record ({@link onRecord}). Within half a done hold a
   *   shard that ran is held "done", so one not held never ran; past it, a shard not held is
   *   queued only if not on record either.
   *
   * Bounded: one inspect per fire time and per shard looked at, only when the cursor is behind
   * the mark.
   */
  private async belowMark(
    job: Job,
    source: Source,
    cursor: number,
    hwm: number,
    missedBefore: number,
  ): Promise<void> {
    const span = fireSpan(source.trigger, cursor, Math.min(hwm + 1, missedBefore), PASSED_LOOKBACK);
    if (!span) return;
    const s = this.state;
    const shards = shardsOf(job);
    const partial = shards.length > 1 ? span.tail.length - PARTIAL_LOOKBACK : span.tail.length;
    // Per fire time, the shards looked at: all of one that may be completed, else shard 0.
    const looked = span.tail.map((f, t) =>
      t >= partial && !source.queue.some((q) => q.fireTime === f) ? shards : shards.slice(0, 1),
    );
    const leases = await Promise.all(
      span.tail.flatMap((fireTime, t) =>
        looked[t]!.map((shard) =>
          s.store.inspect(
            keys.occurrence({ job: source.job, scheduleId: source.scheduleId, fireTime, shard }),
          ),
        ),
      ),
    );
    let at = 0;
    const heldOf = span.tail.map((_, t) => {
      const held = leases.slice(at, at + looked[t]!.length);
      at += looked[t]!.length;
      return held;
    });
    // Looked up on record: the shards not held of each fire time looked at whole — when none of
    // its shards is held, or when it is past half a done hold (a shard that ran may be held no
    // more; within history's retention, which then still says). Within half a done hold with a
    // shard held, one not held never ran: a shard that ran is held "done".
    const lateOf = span.tail.map((fireTime) => missedBefore - fireTime >= doneHold(job) / 2);
    const asks: [number, (number | undefined)[]][] = [];
    span.tail.forEach((fireTime, t) => {
      const of = looked[t]!;
      const held = heldOf[t]!;
      const late = lateOf[t]!;
      if (of.length < 2 || (late && missedBefore - fireTime >= s.retentionMs / 2)) return;
      if (!late && held.some((l) => l !== null)) return;
      asks.push([fireTime, of.filter((_, i) => held[i] === null)]);
    });
    const recorded = await onRecord(this.state, source, asks);
    span.tail.forEach((fireTime, t) => {
      const of = looked[t]!;
      const held = heldOf[t]!;
      for (const [i, lease] of held.entries())
        if (lease && heldNotDone(lease, fireTime, job))
          // Shard 0 alone looked at: its holder may have claimed the other shards too and died
          // with them unstarted, so every shard of the fire time is watched.
          this.watch(job, source, fireTime, of.length === 1 ? shardsOf(job) : [of[i]]);
      if (of.length < 2) return;
      const on = recorded.get(fireTime);
      if (lateOf[t] && on === undefined) return; // not looked up (beyond history's retention)
      const claimed = held.some((l) => l !== null) || on?.claimed === true;
      const rest = of.filter((shard, i) => held[i] === null && on?.accounted.has(shard) !== true);
      if (!claimed || rest.length === 0) return;
      const next = nextFireTimes(source.trigger, fireTime, 1)[0];
      const graceMs = spreadGrace(next === undefined ? undefined : next - fireTime);
      const at = sourceStart(source, fireTime);
      source.queue.push({
        fireTime,
        ...(at !== fireTime && { at }),
        source: 'schedule',
        shards: rest,
        graceMs,
      });
    });
    source.queue.sort((a, b) => a.fireTime - b.fireTime);
  }

  /**
   * Watches the fire time's claim, held by another node (claim/watch.ts): each of `shards` (every
   * shard of a sharded job unless said). Only shard 0's claim is looked at to find a fire time
   * held; a node that claimed it claims the fire time's other shards in the same acquire, and when
   * it dies before their start records they are lost unless watched too (simulator: three jobs,
   * the fault mix, seeds 67, 181 and 481 — a sharded trigger's fire time just after a resume,
   * claimed whole by a node that crashed 33 ms later; every other node saw shard 0 held, watched
   * it, and recovered shard 0 alone). A watched shard found free and not on record is run as a
   * recovery; one running or "done" is left alone.
   */
  private watch(job: Job, source: Source, fireTime: number, shards = shardsOf(job)): void {
    // Its recovery (claim/unanswered.ts) is told the jittered start, as every node computes it.
    const at = sourceStart(source, fireTime);
    for (const shard of shards)
      this.state.heldElsewhere({
        occ: { job: source.job, scheduleId: source.scheduleId, fireTime, shard },
        ...(at !== fireTime && { scheduledAt: at }),
        source: 'misfire',
        data: source.data,
        attempt: 1,
        gate: job.spec.overlap !== 'allow',
      });
  }

  /** A replay is announced once, not at every tick that offers it again. */
  private announce(source: Source, fireTime: number): void {
    if (source.announced === fireTime) return;
    source.announced = fireTime;
    this.emit(source, 'run', fireTime, fireTime, 1);
  }

  private emit(
    source: Source,
    action: 'skipped' | 'run',
    first: number,
    last: number,
    count: number | undefined,
  ): void {
    emitMisfired(this.state, source, action, first, last, count);
  }
}

/** The latest fire time of the open span that the job's misfire policy skips (see `Misfires.handle`), if any. */
function skipsUpTo(job: Job, open: FireSpan): number | undefined {
  const { misfire, catchUpLimit } = job.spec;
  if (misfire === 'skip') return open.tail.at(-1);
  if (misfire === 'run-once') return open.tail.length > 1 ? open.tail.at(-2) : undefined;
  if (open.count !== undefined && open.count <= catchUpLimit) return undefined;
  return open.tail[open.tail.length - catchUpLimit - 1];
}
