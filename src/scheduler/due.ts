import { nextFireTimes } from '../schedule/fire-times.js';
import type { Claims } from './claim.js';
import type { HighWater } from './high-water.js';
import { type Candidate, type Job, type Source, shardsOf } from './internal-types.js';
import { keys, type OccurrenceId } from './keys.js';
import type { NodeState } from './node-state.js';

/** How many missed fire times are enumerated at most per source and tick. */
const MAX_ENUMERATE = 10_000;

/** What is due now: each source's fire times up to now, on time or missed (then its misfire policy). */
export class Due {
  constructor(
    private readonly state: NodeState,
    private readonly highWater: HighWater,
    private readonly claims: Claims,
  ) {}

  /** Claims everything due now (one batched acquire) and handles what was missed. */
  async tick(): Promise<void> {
    const s = this.state;
    const now = s.storeClock.estimate() - s.storeClock.errorBound();
    s.lastTickAt = now;
    const candidates: Candidate[] = [];
    let budget = s.freeSlots();
    for (const source of s.sources.values()) {
      const job = s.defined.get(source.job);
      if (!job || s.paused.has(source.job)) continue;
      if (source.cursor === undefined) source.cursor = await this.initialCursor(source, now);
      const due: number[] = [];
      let after = source.cursor;
      for (let i = 0; i < MAX_ENUMERATE; i++) {
        // The first look is the memoised one: most ticks find nothing due for most sources.
        const f = i === 0 ? nextDue(source, now) : nextFireTimes(source.trigger, after, 1)[0];
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
      const need = (onTime.length + (missed.length > 0 ? 1 : 0)) * shardsOf(job).length;
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
        for (const shard of shardsOf(job)) {
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
    await this.claims.claimAndRun(candidates);
  }

  /** The high-water mark in the store, or now: a brand-new job does not backfill the past. */
  private async initialCursor(source: Source, now: number): Promise<number> {
    const stored = await this.state.store.get(keys.highWater(source.job, source.scheduleId));
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
    const s = this.state;
    const hwmKey = keys.highWater(source.job, source.scheduleId);
    const stored = await s.store.get(hwmKey);
    const hwm = stored === null ? Number.NEGATIVE_INFINITY : Number(stored);
    let open = missed.filter((f) => f > hwm);
    if (open.length > 0) {
      const held = await Promise.all(
        open.map((f) =>
          s.store.inspect(
            keys.occurrence({
              job: source.job,
              scheduleId: source.scheduleId,
              fireTime: f,
              shard: shardsOf(job)[0],
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
      if (times.length > 0) await this.highWater.raiseHighWater(hwmKey, Math.max(...times));
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
        candidates: shardsOf(job).map((shard) => ({
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
      candidates: shardsOf(job).map((shard) => ({
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
    this.state.emit('misfired', {
      job: source.job,
      ...(source.scheduleId !== undefined && { scheduleId: source.scheduleId }),
      fireTime: new Date(fireTime),
      action,
    });
  }
}

/** The source's next fire time after its cursor (or after now, before its first tick), memoised on the source. */
export function nextDue(source: Source, now: number): number | undefined {
  const after = source.cursor ?? now;
  if (source.next?.after !== after) source.next = { after, at: nextFireTimes(source.trigger, after, 1)[0] };
  return source.next.at;
}
