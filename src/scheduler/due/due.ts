import { isExcluded } from '../../schedule/exclude.js';
import { missedBound } from '../../schedule/jitter.js';
import type { Claims } from '../claim/claim.js';
import { SPREAD_GRACE_MS } from '../control/spread.js';
import { type Candidate, type Job, type Source, shardsOf, startOf } from '../internal-types.js';
import { keys } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { sourceLead } from './claim-lead.js';
import { takeEntry } from './due-entry.js';
import type { DueIndex } from './due-index.js';
import { type Due1, oldestOf, reservePermits, type Taken } from './due-permits.js';
import { limitedEntry } from './entry-peek.js';
import { oldestStart, sourceStart } from './jittered.js';
import { LimitedTakeovers } from './limited-takeovers.js';
import type { Misfires } from './misfire.js';
import { movePast } from './move-past.js';
import { dropOnTime, unTake } from './queue-undo.js';
import { sourceClaimable } from './source-peek.js';
import { graceAt, nextDue } from './source-times.js';

/** Occurrences of one source held back for other nodes at most (see `Source.queue`). */
const MAX_QUEUED = 64;

/**
 * What is due now: each job trigger's fire times up to now, on time or missed (then its misfire
 * policy, see misfire.ts), and the stored schedules' due entries (due-index.ts, due-entry.ts),
 * claimed as far as this node's free slots go.
 *
 * Progress: a source never waits for all its due work to fit. A tick claims what fits, oldest
 * first, and moves the source's cursor only past what it claimed or settled; what did not fit is
 * seen again at the next tick (on time, or by then missed and left to the misfire policy), and the
 * shards of an occurrence that did not all fit are claimed first as slots free up (`partial`).
 * Fairness: a first round gives every due source an even share of the free slots (at least one),
 * a second round gives what is left to the sources that want more, and each tick starts the
 * rounds one source further on, so one hot source cannot take every slot of every tick. A due
 * entry of a stored schedule is a source of its own here, as each stored schedule was before.
 */
export class Due {
  /** Where the next tick starts its rounds over the sources. */
  private turn = 0;
  /** The last tick ran out of free slots with work still due: tick again when slots are free. */
  backlog = false;
  /** The earliest store time at which something the last tick held back for another node becomes claimable here. */
  wakeAt = Number.POSITIVE_INFINITY;
  private readonly takeovers: LimitedTakeovers;

  constructor(
    private readonly state: NodeState,
    private readonly misfires: Misfires,
    private readonly claims: Claims,
    readonly index: DueIndex,
  ) {
    this.takeovers = new LimitedTakeovers(state);
    state.claimWaits = (id) => index.expected.cancel(id);
    state.permitFreed = () => {
      this.wakeAt = Number.NEGATIVE_INFINITY;
    };
  }

  /** Claims what is due now and fits (one batched acquire), and handles what was missed. */
  async tick(): Promise<void> {
    const s = this.state;
    const now = s.storeClock.estimate() - s.storeClock.errorBound();
    s.lastTickAt = now;
    this.wakeAt = Number.POSITIVE_INFINITY;
    s.spread.self(s.defined, false);
    // Claims an earlier tick sent without getting an answer: started if granted, else offered again.
    await this.claims.resolveUnanswered();
    await this.index.refresh(now);
    // The calendars exclusions name, read once and held (calendar-cache.ts): nothing to do when
    // no exclusion names one, or every one named is held.
    if (s.jobCalendars.size > 0 || this.index.calendars.size > 0)
      await s.calendars.ensure(new Set([...s.jobCalendars, ...this.index.calendars]));
    const candidates: Candidate[] = [];
    const all: Due1[] = [];
    // What the takes change before the claims go out: put back if a take fails (see unTake).
    const taken = new Map<Source, Pick<Source, 'cursor' | 'queue'>>();
    const recoveries = s.dueRecoveries.size > 0 ? new Map(s.dueRecoveries) : undefined;
    for (const source of s.sources.values()) {
      const job = s.defined.get(source.job);
      if (!job) continue;
      if (s.paused.has(source.job)) {
        dropOnTime(source);
        continue;
      }
      if (source.cursor === undefined) source.cursor = await this.initialCursor(source, now);
      const next = nextDue(source, now);
      // Claimed up to its claim lead ahead of its start (claim-lead.ts).
      const lead = next === undefined ? 0 : sourceLead(s, job, source, next);
      if (source.queue.length > 0 || (next !== undefined && sourceStart(source, next) <= now + lead))
        all.push({
          take: (limit, first) => {
            if (!taken.has(source))
              taken.set(source, {
                cursor: source.cursor,
                queue: source.queue.map((q) => ({ ...q, shards: [...q.shards] })),
              });
            return this.take(job, source, now, limit, candidates, first);
          },
          ...(s.limits.limited(job.spec) && {
            limited: job,
            cursor: true as const,
            start: oldestStart(source, next ?? now, now, job.spec.misfireThresholdMs),
            claimable: () => sourceClaimable(s, job, source, now, lead),
          }),
        });
    }
    // One per job: a limited job's recoveries are reserved for like its other claims (a shard item
    // recovered without a permit ran beyond maxConcurrency).
    const recovering = new Map<string, [string, Candidate][]>();
    for (const entry of s.dueRecoveries) {
      const list = recovering.get(entry[1].occ.job);
      if (list) list.push(entry);
      else recovering.set(entry[1].occ.job, [entry]);
    }
    for (const [name, list] of recovering) {
      const job = s.defined.get(name);
      all.push({
        take: async (limit) => this.recoveries(list, limit, candidates),
        ...(job && s.limits.limited(job.spec) && { limited: job, want: list.length, start: oldestOf(list) }),
      });
    }
    for (const e of this.index.ready) {
      const job = s.defined.get(e.schedule.job);
      // Read before a pause of its job or of itself (schedule-pause.ts): not offered from then on.
      if (!job || s.paused.has(e.schedule.job) || s.pausedSchedules.has(e.schedule.id)) continue;
      all.push({
        take: async (limit) => {
          const before = candidates.length;
          const taken = takeEntry(s, job, e, now, limit, candidates);
          // A missed fire time that another path ran (a backfill) is moved past if refused.
          movePast(s, e, candidates.slice(before));
          if (taken.heldUntil !== undefined) this.wakeAt = Math.min(this.wakeAt, taken.heldUntil);
          else if (!taken.more) this.index.offeredInFull(e);
          return taken;
        },
        ...limitedEntry(s, job, e, now),
      });
    }
    const start = all.length === 0 ? 0 : this.turn++ % all.length;
    const rotated = all.map((_, i) => all[(start + i) % all.length]!);
    // With many slots, at most half of them per tick: with a backlog the loop ticks again as soon
    // as this tick's claims are answered, so the next claims overlap the start batches of these
    // (a claim round trip of 1,000 leases takes about as long as their start batches) instead of
    // waiting behind them. 20,000 due at once on 4 nodes (PostgreSQL, concurrency 1,000): all
    // started after 8.4 s instead of 17 s. A few slots are claimed in one go: that round trip is short.
    const perTick = s.concurrency >= 64 ? Math.ceil(s.concurrency / 2) : s.concurrency;
    const left = Math.min(s.freeSlots(), perTick);
    // Another node's shards of a limited job trigger already run elsewhere ask no permits.
    this.takeovers.look(now);
    // Jobs with fleet limits: what the fleet allows now is reserved first, and takes no more.
    const permits = await reservePermits(s, rotated, left, now, (at) => {
      this.wakeAt = Math.min(this.wakeAt, at);
    });
    // Settled whatever fails on the way (a store call of a take, the claims): a reservation left
    // unsettled would count its permits for good — the node keeps its entry fresh — and a job
    // limited to one run at a time would never run again (simulator, fleet limits sweep seed 27).
    try {
      const due = permits ? permits.arrange(rotated, all) : rotated;
      // A backlog makes the loop tick again at once (loop.ts): only when this tick claims
      // something, so that it cannot spin — what was offered and not taken (held for another
      // node, its slots spoken for) is retried at its wake-up, a run's end or the next poll.
      try {
        this.backlog = (await this.rounds(due, left)) && candidates.length > 0;
        this.index.slotsShort = this.backlog;
      } catch (err) {
        unTake(s, taken, recoveries);
        throw err;
      }
      await this.claims.claimAndRun(candidates, true);
    } finally {
      permits?.settled();
    }
  }

  /**
   * The tick's rounds over the due sources and entries (see the class comment), with `left` free
   * slots; returns whether some wanted more than was left.
   */
  private async rounds(due: readonly Due1[], left: number): Promise<boolean> {
    let unserved = false;
    const share = Math.max(1, Math.floor(left / Math.max(1, due.length)));
    const wanting: Due1[] = [];
    for (const d of due) {
      if (left <= 0) return true;
      const taken = await d.take(Math.min(share, left), true);
      left -= taken.used;
      if (taken.more) wanting.push(d);
    }
    for (const d of wanting) {
      if (left <= 0) return true;
      const taken = await d.take(left, false);
      left -= taken.used;
      if (taken.more) unserved = true;
    }
    return unserved;
  }

  /**
   * Up to `limit` claims of one source: queued occurrences first (shards left over for want of
   * slots, or held back for their preferred node, spread.ts), then (first round only) what was
   * missed, then on-time fire times oldest first. Returns how many slots it used and whether the
   * source has more due now that did not fit (what waits for another node's grace does not count:
   * the loop wakes for it at `wakeAt`).
   */
  private async take(
    job: Job,
    source: Source,
    now: number,
    limit: number,
    out: Candidate[],
    firstRound: boolean,
  ): Promise<Taken> {
    const s = this.state;
    const shards = shardsOf(job);
    const count = job.spec.shards?.count;
    const gated = job.spec.overlap !== 'allow';
    // A replay and on-time fire times in one batch would race for the same overlap gate, and the
    // on-time run would be recorded as skipped for "overlapping" a replay that had not even
    // started: the on-time ones come next, when the replay ends (its run pokes the loop) or at the
    // next poll; skipped only if the replay is still going. A catch-up replay always waits for the
    // previous one (and on-time fire times queue up as missed behind the replays).
    const replayFirst = gated || job.spec.misfire === 'catch-up';
    let used = 0;
    let short = false;
    /** The start of the oldest work claimable here now that did not fit (see `Taken`). */
    let waiting: number | undefined;
    /** Offers the queued occurrences' shards that are claimable here now and fit. */
    const drain = (): void => {
      for (const q of source.queue) {
        const rest: (number | undefined)[] = [];
        // Claimed from its start (fire time plus jitter), never before.
        const start = q.at ?? q.fireTime;
        for (const shard of q.shards) {
          const occ = { job: source.job, scheduleId: source.scheduleId, fireTime: q.fireTime, shard };
          const at = s.spread.claimableAt(occ, count, q.graceMs, start);
          // An on-time fire time of this node's share is claimed up to its lead ahead of its start
          // (claim-lead.ts); an excluded one at its start (only recorded skipped, nothing to gain).
          const ahead =
            at > now &&
            at === start &&
            q.source === 'schedule' &&
            at <= now + sourceLead(s, job, source, q.fireTime) &&
            !(source.exclude !== undefined && isExcluded(source.exclude, q.fireTime, s.calendars.lookup));
          if (at > now && !ahead) {
            this.wakeAt = Math.min(this.wakeAt, at);
            rest.push(shard);
          } else if (used >= limit) {
            short = true;
            waiting = Math.min(waiting ?? start, start);
            rest.push(shard);
          } else {
            // Excluded (schedule/exclude.ts): claimed only to be recorded skipped, so no gate.
            const excluded =
              source.exclude !== undefined && isExcluded(source.exclude, q.fireTime, s.calendars.lookup);
            out.push({
              occ,
              ...(q.at !== undefined && { scheduledAt: q.at }),
              source: q.source,
              data: source.data,
              attempt: 1,
              gate: excluded
                ? false
                : q.source === 'misfire' && job.spec.misfire === 'catch-up'
                  ? true
                  : gated,
              ...(excluded && { excluded: true as const }),
              ...(at > start && { takeover: true as const }),
              ...(ahead && { ahead: true as const }),
              ...(q.source === 'recover' && { unstarted: true as const }),
            });
            used++;
          }
        }
        q.shards = rest;
      }
      source.queue = source.queue.filter((q) => q.shards.length > 0);
    };
    const queue = (fireTime: number, from: 'schedule' | 'misfire') => {
      const at = sourceStart(source, fireTime);
      source.queue.push({
        fireTime,
        ...(at !== fireTime && { at }),
        source: from,
        shards: [...shards],
        graceMs: graceAt(source, fireTime),
      });
      drain();
    };
    if (source.queue.length > 0) {
      const replay = source.queue.some((q) => q.source !== 'schedule');
      drain();
      if (short) return { used, more: true, waiting };
      if (replay && replayFirst) return { used, more: false };
    }
    // Lateness counts from when an occurrence could be claimed here: from its start (fire time plus
    // jitter), after the grace when it is another node's to go first (a takeover after the grace
    // is on time, not missed).
    const upcoming = nextDue(source, now);
    const missedBefore =
      now -
      job.spec.misfireThresholdMs -
      s.spread.graceFor(job.spec.name, upcoming === undefined ? SPREAD_GRACE_MS : graceAt(source, upcoming));
    if (firstRound) {
      const next = nextDue(source, now);
      const nextAt = next === undefined ? undefined : sourceStart(source, next);
      if (next !== undefined && nextAt !== undefined && nextAt < missedBefore) {
        // The misfire maths goes by nominal fire times: those whose start was before missedBefore
        // (`next` among them: handled now, not once a bound allowing for the largest offset of a
        // fresh offset per fire time has passed it; jitter.ts, missedBound).
        const { jitter, trigger, scheduleId } = source;
        const before = missedBound(jitter, trigger, source.job, scheduleId, next, nextAt, missedBefore);
        const replay = await this.misfires.handle(job, source, before);
        // Catch-up, the replay before still to be settled: nothing more of this source now (its
        // missed fire times are not "more" to take this tick: a round after this one found the
        // cursor still behind and asked for one, again and again).
        if (replay === null) return { used, more: false };
        if (replay !== undefined) {
          queue(replay, 'misfire');
          if (short) return { used, more: true, waiting };
          if (replayFirst) return { used, more: false };
        }
      }
    }
    while (used < limit) {
      const f = nextDue(source, now);
      const at = f === undefined ? undefined : sourceStart(source, f);
      if (f === undefined || at === undefined || at > now + sourceLead(s, job, source, f))
        return { used, more: false };
      // A missed one here (a source that ran out of slots in an earlier round) is left to the next
      // tick's misfire handling.
      if (at < missedBefore) return { used, more: true };
      // Held back for other nodes (a fast trigger): bounded; the cursor waits until they are offered.
      if (source.queue.length >= MAX_QUEUED) return { used, more: false };
      source.cursor = f;
      queue(f, 'schedule');
      if (short) return { used, more: true, waiting };
    }
    const f = nextDue(source, now);
    const fAt = f === undefined ? undefined : sourceStart(source, f);
    const more = fAt !== undefined && fAt <= now + sourceLead(s, job, source, f!);
    // The next on-time fire time waits too (a missed one is the misfire handling's, next tick).
    if (more && fAt <= now) waiting = Math.min(waiting ?? fAt, fAt);
    return { used, more, waiting };
  }

  /**
   * Up to `limit` of one job's stored schedules' shard items waiting for recovery (`list`, from
   * NodeState.dueRecoveries, unanswered.ts): of a paused job or schedule they wait; of a job no
   * longer defined here they are dropped (claimed and never started, they are the nodes' that
   * define it: their watch finds them).
   */
  private recoveries(list: readonly [string, Candidate][], limit: number, out: Candidate[]): Taken {
    const s = this.state;
    let used = 0;
    let waiting: number | undefined;
    for (const [key, c] of list) {
      if (!s.dueRecoveries.has(key)) continue;
      if (!s.defined.has(c.occ.job)) s.dueRecoveries.delete(key);
      else if (s.paused.has(c.occ.job) || s.pausedSchedules.has(c.occ.scheduleId!)) continue;
      else if (used >= limit) {
        const start = startOf(c);
        waiting = Math.min(waiting ?? start, start);
      } else {
        s.dueRecoveries.delete(key);
        out.push(c);
        used++;
      }
    }
    return { used, more: waiting !== undefined, waiting };
  }

  /**
   * The high-water mark in the store, or now: a brand-new job does not backfill the past. "Brand
   * new" is the fleet's view, not this node's: the first node to find no mark writes one at its
   * start, so that a node started later handles the fire times since then as the others do —
   * missed ones included. Until a fire time of the job had run or been settled there was no mark,
   * and a node started after the first fire times took them for the past: it claimed the next
   * one on time, raising the mark past a fire time whose replay lived only in another node's
   * memory, and when that node crashed before claiming it nobody ran or recorded it (simulator,
   * four nodes, a sharded job under `maxConcurrency: 2`, scripts/sweep.ts mix5 seed 194:
   * `m5lim@+2 s` lost; test/simulate-first-mark.test.ts). A plain put after the read: two nodes
   * starting together may write their own starts (the mark is a plain put anyway, high-water.ts).
   */
  private async initialCursor(source: Source, now: number): Promise<number> {
    const key = keys.highWater(source.job, source.scheduleId);
    const stored = await this.state.store.get(key);
    if (stored !== null) return Number(stored);
    const start = Math.floor(now);
    await this.state.store.put(key, String(start));
    return start;
  }
}
