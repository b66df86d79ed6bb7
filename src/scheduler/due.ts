import { nextFireTimes } from '../schedule/fire-times.js';
import type { Claims } from './claim.js';
import { takeEntry } from './due-entry.js';
import type { DueIndex } from './due-index.js';
import { type Candidate, type Job, type Source, shardsOf } from './internal-types.js';
import { keys } from './keys.js';
import type { Misfires } from './misfire.js';
import type { NodeState } from './node-state.js';

/** One due source or due index entry, taking up to `limit` claims of a tick. */
interface Due1 {
  take: (limit: number, firstRound: boolean) => Promise<{ used: number; more: boolean }>;
}

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

  constructor(
    private readonly state: NodeState,
    private readonly misfires: Misfires,
    private readonly claims: Claims,
    readonly index: DueIndex,
  ) {}

  /** Claims what is due now and fits (one batched acquire), and handles what was missed. */
  async tick(): Promise<void> {
    const s = this.state;
    const now = s.storeClock.estimate() - s.storeClock.errorBound();
    s.lastTickAt = now;
    await this.index.refresh(now);
    const candidates: Candidate[] = [];
    const all: Due1[] = [];
    for (const source of s.sources.values()) {
      const job = s.defined.get(source.job);
      if (!job || s.paused.has(source.job)) continue;
      if (source.cursor === undefined) source.cursor = await this.initialCursor(source, now);
      const next = nextDue(source, now);
      if (source.partial || (next !== undefined && next <= now))
        all.push({ take: (limit, first) => this.take(job, source, now, limit, candidates, first) });
    }
    for (const e of this.index.ready) {
      const job = s.defined.get(e.schedule.job);
      if (!job || s.paused.has(e.schedule.job)) continue;
      all.push({
        take: async (limit) => {
          const taken = takeEntry(s, job, e, now, limit, candidates);
          if (!taken.more) this.index.offeredInFull(e);
          return taken;
        },
      });
    }
    const start = all.length === 0 ? 0 : this.turn++ % all.length;
    const due = all.map((_, i) => all[(start + i) % all.length]!);
    let left = s.freeSlots();
    let unserved = false;
    const share = Math.max(1, Math.floor(left / Math.max(1, due.length)));
    const wanting: typeof due = [];
    for (const d of due) {
      if (left <= 0) {
        unserved = true;
        break;
      }
      const taken = await d.take(Math.min(share, left), true);
      left -= taken.used;
      if (taken.more) wanting.push(d);
    }
    for (const d of wanting) {
      if (left <= 0) {
        unserved = true;
        break;
      }
      const taken = await d.take(left, false);
      left -= taken.used;
      if (taken.more) unserved = true;
    }
    this.backlog = unserved;
    await this.claims.claimAndRun(candidates);
  }

  /**
   * Up to `limit` claims of one source: shards left over from an earlier tick, then (first round
   * only) what was missed, then on-time fire times oldest first. Returns how many slots it used
   * and whether the source has more due now.
   */
  private async take(
    job: Job,
    source: Source,
    now: number,
    limit: number,
    out: Candidate[],
    firstRound: boolean,
  ): Promise<{ used: number; more: boolean }> {
    const shards = shardsOf(job);
    const gated = job.spec.overlap !== 'allow';
    // A replay and on-time fire times in one batch would race for the same overlap gate, and the
    // on-time run would be recorded as skipped for "overlapping" a replay that had not even
    // started: the on-time ones come next, when the replay ends (its run pokes the loop) or at the
    // next poll; skipped only if the replay is still going. A catch-up replay always waits for the
    // previous one (and on-time fire times queue up as missed behind the replays).
    const replayFirst = gated || job.spec.misfire === 'catch-up';
    let used = 0;
    /** Claims the partial occurrence's shards that fit; true once all of them are claimed. */
    const fill = (): boolean => {
      const p = source.partial!;
      const n = Math.min(limit - used, shards.length - p.next);
      for (let i = p.next; i < p.next + n; i++) {
        out.push({
          occ: { job: source.job, scheduleId: source.scheduleId, fireTime: p.fireTime, shard: shards[i] },
          source: p.source,
          data: source.data,
          attempt: 1,
          gate: p.source === 'misfire' && job.spec.misfire === 'catch-up' ? true : gated,
        });
      }
      used += n;
      p.next += n;
      if (p.next < shards.length) return false;
      source.partial = undefined;
      return true;
    };
    if (source.partial) {
      const replay = source.partial.source === 'misfire';
      if (!fill()) return { used, more: true };
      if (replay && replayFirst) return { used, more: false };
    }
    const missedBefore = now - job.spec.misfireThresholdMs;
    if (firstRound) {
      const next = nextDue(source, now);
      if (next !== undefined && next < missedBefore) {
        const replay = await this.misfires.handle(job, source, missedBefore);
        if (replay !== undefined) {
          source.partial = { fireTime: replay, source: 'misfire', next: 0 };
          if (!fill()) return { used, more: true };
          if (replayFirst) return { used, more: false };
        }
      }
    }
    while (used < limit) {
      const f = nextDue(source, now);
      if (f === undefined || f > now) return { used, more: false };
      // A missed one here (a source that ran out of slots in an earlier round) is left to the next
      // tick's misfire handling.
      if (f < missedBefore) return { used, more: true };
      source.cursor = f;
      source.partial = { fireTime: f, source: 'schedule', next: 0 };
      if (!fill()) return { used, more: true };
    }
    const f = nextDue(source, now);
    return { used, more: f !== undefined && f <= now };
  }

  /** The high-water mark in the store, or now: a brand-new job does not backfill the past. */
  private async initialCursor(source: Source, now: number): Promise<number> {
    const stored = await this.state.store.get(keys.highWater(source.job, source.scheduleId));
    return stored === null ? now : Number(stored);
  }
}

/** The source's next fire time after its cursor (or after now, before its first tick), memoised on the source. */
export function nextDue(source: Source, now: number): number | undefined {
  const after = source.cursor ?? now;
  if (source.next?.after !== after) source.next = { after, at: nextFireTimes(source.trigger, after, 1)[0] };
  return source.next.at;
}
