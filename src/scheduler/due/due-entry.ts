import { type CompiledExclude, isExcluded } from '../../schedule/exclude.js';
import { fireSpan } from '../../schedule/fire-span.js';
import { nextFireTimes } from '../../schedule/fire-times.js';
import { type CompiledJitter, missedBound, startOfFire } from '../../schedule/jitter.js';
import type { CompiledTrigger } from '../../schedule/trigger.js';
import type { WriteOp } from '../../store/types.js';
import { claimsInPages } from '../claim/eligible.js';
import { replacedLately } from '../claim/replaced-prev.js';
import { pausedPart, pausedSpanEntry } from '../control/pause-span.js';
import { countDown } from '../control/runs-left.js';
import type { StoredScheduleRecord } from '../control/schedule-input.js';
import { SPREAD_GRACE_MS, spreadGrace } from '../control/spread.js';
import { type Candidate, type Job, shardsOf, startOf } from '../internal-types.js';
import { keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { countedPageMove } from './counted-move.js';
import type { Taken } from './due-permits.js';
import { emitMisfired, emitPausedSpan } from './misfire-events.js';
import { type PendingFire, pendingAfter, pendingShards } from './pending-shards.js';

/** A due index entry read with its (fresh) schedule: what a tick offers, shard by shard. */
export interface DueEntry {
  key: string;
  /** The occurrence's nominal fire time. */
  fireTime: number;
  /** When it is to start (the key's time): `fireTime` plus the schedule's jitter. */
  at: number;
  schedule: StoredScheduleRecord;
  trigger: CompiledTrigger;
  /** The schedule's jitter (schedule/jitter.ts), if any. */
  jitter?: CompiledJitter;
  /**
   * Moved here by the settle of a pause's span (control/pause-span.ts): missed fire times settled
   * from here are a plain misfire, never a second span of that pause (a replay not claimed in time).
   */
  spanned?: boolean;
  /** The schedule's exclusions (schedule/exclude.ts), if any: an excluded fire time is claimed to be recorded skipped. */
  exclude?: CompiledExclude;
  /**
   * The candidates of this entry not offered yet, decided once (on time or missed, and the misfire
   * policy); shards that did not all fit wait for free slots, shards another node goes first for
   * wait for the grace (spread.ts).
   */
  plan?: Candidate[];
  /** How long a node that is not preferred waits after the fire time (spread.ts), set with `plan`. */
  graceMs?: number;
  /** The fire time the entry moves on to (the next scan expects it), if any. */
  next?: number | undefined;
  /** When that one is to start (its fire time plus jitter: the moved entry's key time). */
  nextAt?: number | undefined;
  /** Store time (this node's estimate) of the read that returned the entry. */
  readAt: number;
  /** The page run its entry names (a page moved it there: page/prev-run.ts). */
  prev?: { page: string; fireTime: number } | undefined;
  /**
   * That page's record still exists (read with the entry): its run may be going, or waiting for
   * recovery. A fire time behind it that is late was held back by that run, not missed: it is
   * judged for overlap (page/prev-run.ts), never by the misfire policy.
   */
  prevLive?: boolean;
  /**
   * The page that moved the entry here, when it is not the one `prev` names (its item for the
   * fire time before was a skip or only settled a move): while its record exists and it has not
   * started, the entry waits (claim/prev-run.ts) — a recovery of that page finds what it won by
   * the entries still where it moved them.
   */
  movedBy?: string | undefined;
  /** That page's record still exists (read with the entry). */
  movedByLive?: boolean;
  /** Store time of the upsert that replaced the schedule, when no page has moved the entry since (replaced-runs.ts). */
  replacedAt?: number | undefined;
  /**
   * (A sharded job) the fire time before, whose shard 0's claim moved the entry here, and older
   * ones still carried (pending-shards.ts), newest first: their other shards are offered again
   * with this entry (their claims are refused where they ran already). The nodes that read the
   * entry before the move hold those shards only in memory; a crash, or a re-read of the index,
   * dropped them, and no later read met that fire time again.
   */
  pending?: PendingFire[] | undefined;
  /** (A schedule with maxRuns, control/runs-left.ts) the runs that may still start, this fire time's included. */
  left?: number;
  /** (With `left`, set with `next` when the plan runs F) where the entry goes if F is won and not run. */
  unrun?: { next: number | undefined; nextAt: number | undefined; ops: WriteOp[] } | undefined;
}

/**
 * What one due entry at fire time F turns into, mirroring misfire.ts for the jobs' own triggers:
 *  - on time (F ≥ now − misfireThreshold): F's shards; shard 0's start batch moves the entry to
 *    the next fire time after F;
 *  - missed, `skip`: a claim of F (shard 0) settled "done", moving the entry to the first fire
 *    time not missed — one misfired event for the span;
 *  - missed, `run-once`: when F is the only missed fire time, F replayed (moving on to the first
 *    not missed); otherwise a claim of F settled "done", jumping the entry to the latest missed
 *    one, which the next scan replays;
 *  - missed, `catch-up`: F replayed (moving on to the next one after F); more than catchUpLimit
 *    missed: the excess skipped by a claim of F jumping the entry to the first one kept.
 * Every move is written by the winner of F's shard-0 claim only, so an entry has one successor:
 * the chain cannot fork, and a moved-on entry is never met again.
 */
export function planEntry(state: NodeState, job: Job, e: DueEntry, now: number): Candidate[] {
  const paged = claimsInPages(state, job);
  const plan = planMoves(state, job, e, now, paged);
  // The remembered fire times' shards first: the entry remembers only a few fire times back
  // (pending-shards.ts), so a shard offered after this fire time's shard 0 — whose claim moves
  // the entry on, and with it that memory — was lost whenever the take stopped between them (a
  // fleet limit's few permits per tick: simulator, latency and stalls only, a sharded stored
  // schedule under maxConcurrency 2, seeds 2 and 6; a shard two fire times behind never ran).
  if (!paged) return e.pending === undefined ? plan : [...pendingShards(state, job, e, now), ...plan];
  // One candidate (the job is not sharded), carrying the entry's move; claimed in a page.
  const s = e.schedule;
  for (const c of plan)
    if (c.advance || c.settleOnly)
      c.pageMove = {
        from: e.key,
        to: e.next === undefined ? keys.dueEnded(s.id, s.v) : keys.dueEntry(e.next, s.id, s.v, e.nextAt),
        next: e.next,
        v: s.v,
        // Only a page still in flight at the read: a page's record, once gone, never comes back,
        // so the claim need not look again for the others (in a fan-out, all of them).
        ...(e.prev && e.prevLive === true && { prev: e.prev }),
        ...(e.movedBy !== undefined && e.movedByLive === true && { mover: e.movedBy }),
        ...(e.replacedAt !== undefined && e.prevLive !== true && { replacedAt: e.replacedAt }),
        ...countedPageMove(e),
      };
  return plan;
}

/** `paged`: the move is the page's (`pageMove`), so the per-occurrence ops stay empty. */
function planMoves(state: NodeState, job: Job, e: DueEntry, now: number, paged: boolean): Candidate[] {
  const { spec } = job;
  const s = e.schedule;
  const F = e.fireTime;
  const shards = shardsOf(job);
  const gated = spec.overlap !== 'allow';
  const occ = (fireTime: number, shard: number | undefined): OccurrenceId => ({
    job: s.job,
    scheduleId: s.id,
    fireTime,
    shard,
  });
  const after = (t: number) => nextFireTimes(e.trigger, t, 1)[0];
  const claimedShard = (c: Candidate) => state.accountedShards.holds(keys.occurrence(c.occ), now);
  // A sharded job's shard 0 moves the entry: a move that runs F names F (and the older fire
  // times still carried), whose other shards its readers offer again (DueEntry.pending); one that
  // settles F unrun carries the older ones only — dropped, a shard of the fire time before that
  // a dead node had claimed was lost (simulator, five nodes, fault mix, seed 64: shs/s0@+2 s#1,
  // the entry's next fire time settled as a skipped misfire).
  const memory = (carry: boolean) => (shards.length > 1 ? pendingAfter(job, e, now, carry) : undefined);
  // Keyed by its start: the fire time plus jitter (capped at the gap to the one after it).
  const startOf = (t: number | undefined) =>
    t === undefined ? t : startOfFire(e.jitter, e.trigger, s.job, s.id, t);
  const ops = (to: number | undefined, value: string): WriteOp[] => [
    { op: 'delete', key: e.key },
    ...(to === undefined
      ? []
      : [{ op: 'put' as const, key: keys.dueEntry(to, s.id, s.v, startOf(to)), value }]),
  ];
  // `carry`: a move that runs F (only those carry F's other shards). With maxRuns it counts one
  // down (control/runs-left.ts), and the last one ends the schedule; `e.unrun`: the move if F,
  // once won, is not run after all (skipped for overlap, excluded).
  const moveTo = (next: number | undefined, carry = false): WriteOp[] => {
    const left = e.left === undefined ? undefined : carry ? e.left - 1 : e.left;
    const to = left === 0 ? undefined : next;
    e.next = to;
    e.nextAt = startOf(to);
    const memo = memory(carry);
    const value = (l: number | undefined) =>
      l === undefined && memo === undefined
        ? JSON.stringify({ job: s.job })
        : JSON.stringify({ job: s.job, ...memo, ...(l !== undefined && { left: l }) });
    e.unrun =
      carry && e.left !== undefined
        ? { next, nextAt: startOf(next), ops: paged ? [] : ops(next, value(e.left)) }
        : undefined;
    if (paged) return [];
    return carry && e.left !== undefined
      ? [...ops(to, value(left)), ...countDown(s.id, s.v, e.left)]
      : ops(to, value(left));
  };
  // Excluded (schedule/exclude.ts): claimed like a run, to be recorded skipped (no gate).
  const excluded = e.exclude !== undefined && isExcluded(e.exclude, F, state.calendars.lookup);
  const run = (source: 'schedule' | 'misfire', advance: WriteOp[], onWon?: () => void): Candidate[] =>
    shards.map((shard, i) => ({
      occ: occ(F, shard),
      ...(e.at !== F && { scheduledAt: e.at }),
      source,
      data: s.data,
      attempt: 1,
      gate: gated && !excluded,
      ...(excluded && { excluded: true as const }),
      entryReadAt: e.readAt,
      ...(i === 0 && {
        advance,
        ...(e.unrun && !paged && { advanceIfUnrun: e.unrun.ops }),
        ...(onWon && { onWon }),
      }),
    }));
  // `skipped`: the fire times F..last it settles unrun; left by a pause, their `paused` entry.
  const settleOnly = (
    ops: WriteOp[],
    onWon: () => void,
    skipped?: { last: number; count: number | undefined },
  ): Candidate[] => {
    const c: Candidate = {
      occ: occ(F, shards[0]),
      source: 'misfire',
      data: s.data,
      attempt: 1,
      gate: false,
      entryReadAt: e.readAt,
      settleOnly: ops,
      onWon,
    };
    // The part of the span a pause left (control/pause-span.ts): from the first fire time not yet
    // missed when the pause began; those missed before it are a plain misfire (the event above).
    const part =
      skipped && e.spanned !== true
        ? pausedPart(
            state,
            { job: s.job, scheduleId: s.id, trigger: e.trigger },
            { first: F, ...skipped },
            spec.misfireThresholdMs,
          )
        : undefined;
    if (skipped && part) {
      // The moved entry says so (per occurrence here; a page's move, page-claims.ts).
      const spanned = JSON.stringify({ job: s.job, spanned: true });
      c.settleOnly = ops.map((op) =>
        op.op === 'put' && op.key.startsWith(keys.duePrefix) ? { ...op, value: spanned } : op,
      );
      const occ = { ...c.occ, fireTime: part.first };
      const span = { last: skipped.last, count: part.count };
      c.pausedSpan = (token, at) => pausedSpanEntry(state, occ, span, token, at);
      c.onWon = () => {
        onWon();
        emitPausedSpan(state, occ, span);
      };
    }
    return [c];
  };
  // Lateness counts from when the entry could be claimed here (after the grace when another node
  // goes first): a takeover after the grace is on time, not missed.
  const following = after(F);
  e.graceMs = spreadGrace(following === undefined ? undefined : following - F);
  const late = now - spec.misfireThresholdMs - state.spread.graceFor(s.job, e.graceMs);
  // Lateness counts from the start (fire time plus jitter); the misfire maths below goes by
  // nominal fire times: those whose start was before `late` (jitter.ts, missedBound).
  // Behind a page still in flight, a gated fire time is judged for overlap at its claim (it was
  // held back by that run, not missed: claim/prev-run.ts). Under `allow` no run holds it back: a
  // late one is missed like any other — judged on time, each fire time of a schedule every second
  // behind a page recovered 10 s late ran one by one, each late, each behind the page of the one
  // before, 1.2-1.9 s apart on a busy fleet: the schedule fell further behind to the end
  // (simulator, busy faults, seeds 205 and 307). A page that has not started still holds the claim back
  // (prev-run.ts), misfire settle or not.
  const held = gated && (e.prevLive === true || e.movedByLive === true);
  if (e.at >= late || held) {
    const cs = run('schedule', moveTo(following, true));
    // Judged at its claim, once that page's run is found ended (claim/prev-run.ts): a fire time
    // late by then was held back, not overlapped — planned again by the misfire policy below (not
    // behind a page that moved the entry without running it, nor a replaced schedule's: those are
    // judged otherwise). On time at this read, it may be late at the claim, which waited for that run.
    if (
      gated &&
      paged &&
      e.prevLive === true &&
      e.movedByLive !== true &&
      e.replacedAt === undefined &&
      cs.length === 1
    )
      cs[0]!.replanLate = (at) => planEntry(state, job, { ...e, prevLive: false, prev: undefined }, at);
    return cs;
  }
  // Missed, but a shard of it was claimed (claim/partly-claimed.ts): run its unclaimed shards.
  if (shards.length > 1 && state.partlyClaimed.holds(e.key, now))
    return run('misfire', moveTo(following, true)).filter((c, i) => i === 0 || !claimedShard(c));
  // One past the latest missed nominal fire time, exact (jitter.ts, missedBound): at least F + 1 —
  // F is missed (its start is before `late`). A bound allowing for the largest offset of a fresh
  // offset per fire time fell below F: a run-once replay of F moved the entry to F itself, and
  // once F had run every read found it held "done": the schedule ran nothing more (simulator,
  // `jex,sb`, sim seed 1: `sb/b5` after +6 s).
  const missedBefore = missedBound(e.jitter, e.trigger, s.job, s.id, F, e.at, late);
  // Every missed fire time is at most this (fire times are whole milliseconds).
  const settled = Math.ceil(missedBefore) - 1;
  const emit = (action: 'skipped' | 'run', first: number, last: number, count: number | undefined) =>
    emitMisfired(state, { job: s.job, scheduleId: s.id }, action, first, last, count);
  if (spec.misfire === 'skip') {
    const span = fireSpan(e.trigger, F - 1, missedBefore, 1);
    const last = span?.tail.at(-1) ?? F;
    return settleOnly(moveTo(after(settled)), () => emit('skipped', F, last, span?.count ?? 1), {
      last,
      count: span ? span.count : 1,
    });
  }
  if (spec.misfire === 'run-once') {
    const span = fireSpan(e.trigger, F - 1, missedBefore, 2);
    if (!span || span.count === 1 || span.tail.length < 2)
      return run('misfire', moveTo(after(settled), true), () => emit('run', F, F, 1));
    const latest = span.tail.at(-1)!;
    const count = span.count === undefined ? undefined : span.count - 1;
    const last = span.tail.at(-2)!;
    return settleOnly(moveTo(latest), () => emit('skipped', F, last, count), { last, count });
  }
  const limit = spec.catchUpLimit;
  const span = fireSpan(e.trigger, F - 1, missedBefore, limit + 1);
  if (span && (span.count === undefined || span.count > limit) && span.tail.length > limit) {
    const count = span.count === undefined ? undefined : span.count - limit;
    const last = span.tail[0]!;
    return settleOnly(moveTo(span.tail[1]), () => emit('skipped', F, last, count), { last, count });
  }
  return run('misfire', moveTo(after(F), true), () => emit('run', F, F, 1));
}

/**
 * How far ahead of its start a jittered schedule's fire time is claimed (by its preferred node):
 * jitter spreads a fleet's 09:00 over minutes, so entries come due one by one; claimed as they
 * come, each cost a read, a page claim, a start write and a finish of its own (100,000 spread over
 * 5 minutes on 4 nodes: ~4× a burst's CPU per occurrence). Claimed up to this far ahead, they go
 * in pages of everything due in the stretch, and each run starts at its own start (run/page-starts.ts).
 */
export const CLAIM_AHEAD_MS = 2_000;

/**
 * Whether the entry's fire time may be claimed before its start: a jittered schedule's, claimed
 * in pages, not behind a page still in flight (overlap is judged at the start then), and not of a
 * job with fleet limits (its permits are granted for starts now, fleet-limits.ts).
 */
export function claimableAhead(state: NodeState, e: DueEntry): boolean {
  const job = state.defined.get(e.schedule.job);
  return (
    job !== undefined &&
    e.jitter !== undefined &&
    e.prevLive !== true &&
    e.movedByLive !== true &&
    !replacedLately(e.fireTime, e.replacedAt) &&
    claimsInPages(state, job) &&
    !state.limits.limited(job.spec)
  );
}

/** The candidate is a plain on-time run of an entry that may be claimed ahead. */
function claimsAhead(state: NodeState, e: DueEntry, c: Candidate): boolean {
  return (
    c.pageMove !== undefined &&
    c.source === 'schedule' &&
    c.settleOnly === undefined &&
    claimableAhead(state, e)
  );
}

/**
 * Offers up to `limit` more of the entry's candidates that are claimable here now (shard 0 first:
 * it carries the move). Returns how many it offered, whether more are left that did not fit, and
 * when the first of those held back for another node becomes claimable here, if any.
 */
export function takeEntry(
  state: NodeState,
  job: Job,
  e: DueEntry,
  now: number,
  limit: number,
  out: Candidate[],
): Taken & { heldUntil?: number } {
  e.plan ??= planEntry(state, job, e, now);
  const count = job.spec.shards?.count;
  const rest: Candidate[] = [];
  let used = 0;
  let more = false;
  let waiting: number | undefined;
  let heldUntil: number | undefined;
  for (const c of e.plan) {
    // What only settles missed fire times is anyone's: nothing runs.
    // Claimed from its start (fire time plus jitter), never before.
    const start = startOf(c);
    let at = c.settleOnly ? now : state.spread.claimableAt(c.occ, count, e.graceMs ?? SPREAD_GRACE_MS, start);
    // Claimed ahead only while the node is less than half busy (this tick's claims counted): a run
    // waiting for its start holds its slot, and a node full of them would keep work due now waiting.
    if (
      at === start &&
      at > now &&
      at <= now + CLAIM_AHEAD_MS &&
      state.concurrency - state.freeSlots() + out.length < state.concurrency / 2 &&
      claimsAhead(state, e, c)
    )
      at = now;
    if (at > now) {
      heldUntil = Math.min(heldUntil ?? at, at);
      rest.push(c);
    } else if (used >= limit) {
      more = true;
      waiting = Math.min(waiting ?? start, start);
      rest.push(c);
    } else {
      if (at > start) c.takeover = true;
      out.push(c);
      used++;
    }
  }
  e.plan = rest;
  return { used, more, waiting, ...(heldUntil !== undefined && { heldUntil }) };
}
