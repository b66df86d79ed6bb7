import { type Job, shardsOf } from '../internal-types.js';
import type { NodeState } from '../node-state.js';
import type { Reservation } from '../run/fleet-limits.js';

/** One due source or due index entry, taking up to `limit` claims of a tick (due.ts). */
export interface Due1 {
  take: (limit: number, firstRound: boolean) => Promise<{ used: number; more: boolean }>;
  /** Its job, when the job has fleet limits (its claims are reserved first, run/fleet-limits.ts). */
  limited?: Job;
  /** A job trigger's source (its cursor moves past missed fire times as it takes them). */
  cursor?: true;
  /** How many claims it may take at most, when not one occurrence's shards (recoveries). */
  want?: number;
}

/** While the fleet is at a job's concurrency limit, its due work is looked at again this often. */
export const LIMIT_RETRY_MS = 100;

/** A tick's reservations (fleet-limits.ts): what each limited job may take, and their return. */
export interface Permits {
  /**
   * `rotated` (the tick's turn order, see due.ts) with its limited items put back in `all`'s
   * order — due sources, then index entries by start time — so a job's permits go to its oldest
   * due work first; each taking no more than its job's grant left (a job out of permits wakes
   * the loop at `retryAt` instead).
   */
  arrange(rotated: readonly Due1[], all: readonly Due1[]): Due1[];
  /** The tick's claims are over: grants not launched go back. */
  settled(): void;
}

/**
 * Reserves, per limited job with due work this tick, as many starts as it may claim: one
 * occurrence per due source or entry (times its shards), at most `left` (the tick's free slots).
 * One write per limited job and tick; `undefined` when no due job is limited.
 */
export async function reservePermits(
  s: NodeState,
  due: readonly Due1[],
  left: number,
  now: number,
  wake: (at: number) => void,
): Promise<Permits | undefined> {
  const want = new Map<Job, number>();
  for (const d of due)
    if (d.limited) want.set(d.limited, (want.get(d.limited) ?? 0) + (d.want ?? shardsOf(d.limited).length));
  if (want.size === 0) return undefined;
  const grants = new Map<Job, { r: Reservation; left: number; retryAt: number }>();
  await Promise.all(
    [...want].map(async ([job, n]) => {
      const r = await s.limits.reserve(job.spec, Math.min(n, left));
      grants.set(job, { r, left: r.granted, retryAt: r.retryAt ?? now + LIMIT_RETRY_MS });
    }),
  );
  const wrap = (d: Due1): Due1 => {
    const g = d.limited && grants.get(d.limited);
    if (!g) return d;
    return {
      take: async (limit, first) => {
        // A rate grant that waited too long (for the tick's other reservations, or earlier
        // takes' store calls) is not used: the loop asks again shortly (fleet-limits.ts, stale).
        if (g.left > 0 && s.limits.stale(d.limited!.spec, g.r)) {
          g.left = 0;
          g.retryAt = now + LIMIT_RETRY_MS;
        }
        if (g.left <= 0) {
          // Waits for permits: not "more" for this tick (the loop would spin), a wake-up instead.
          // A job trigger still settles what it missed meanwhile (its misfire policy: skips on
          // record, the replay queued), taking nothing: left unsettled while the fleet's permits
          // were held, a fresh node starting after them (no high-water mark yet) would never
          // see those fire times (simulator seed 17 of the fleet limits sweep).
          if (d.cursor) await d.take(0, first);
          wake(g.retryAt);
          return { used: 0, more: false };
        }
        const taken = await d.take(Math.min(limit, g.left), first);
        g.left -= taken.used;
        return taken;
      },
    };
  };
  return {
    arrange: (rotated, all) => {
      const oldestFirst = all.filter((d) => d.limited).values();
      return rotated.map((d) => wrap(d.limited ? oldestFirst.next().value! : d));
    },
    settled: () => {
      for (const [job, g] of grants) s.limits.settled(job.spec, g.r);
    },
  };
}
