import { type Candidate, type Job, shardsOf, startOf } from '../internal-types.js';
import type { NodeState } from '../node-state.js';
import type { Reservation } from '../run/fleet-limits.js';

/** One due source or due index entry, taking up to `limit` claims of a tick (due.ts). */
export interface Due1 {
  take: (limit: number, firstRound: boolean) => Promise<Taken>;
  /** Its job, when the job has fleet limits (its claims are reserved first, run/fleet-limits.ts). */
  limited?: Job;
  /** A job trigger's source (its cursor moves past missed fire times as it takes them). */
  cursor?: true;
  /** How many claims it may take at most, when not one occurrence's shards (recoveries). */
  want?: number;
  /**
   * When its oldest work is to start (fire time plus jitter), for a limited job: the fleet hands
   * permits out in this order across nodes (run/limit-record.ts).
   */
  start?: number;
  /**
   * The starts of its work claimable here now, one per claim, without taking anything (an index
   * entry: entry-peek.ts); `undefined`: not known without a take. Absent: a take of nothing tells
   * where it waits, and a reservation counts `want` (or its job's shards) from `start`.
   */
  claimable?: () => readonly number[] | undefined;
}

/**
 * What a take used of its slots, whether it has more due now that did not fit, and `waiting`: the
 * start of the oldest of that which was claimable here now (not held for another node or for its
 * start) — for a limited job, what waits for a permit.
 */
export interface Taken {
  used: number;
  more: boolean;
  waiting?: number | undefined;
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
  // Per limited job, its due items as [start, claims] (each of an item's claims counted from the
  // item's oldest start: a source's later fire times wait behind its first anyway). An index
  // entry or a job trigger counts only what this node may claim now (entry-peek.ts,
  // source-peek.ts): one held for its preferred node (spread.ts) asked permits here at every tick
  // of every node, and gave them back unused (simulator, the slow-machine workload of
  // test/simulate-slow-machine: its capped job still fell behind in 1 of seeds 1-200 without this,
  // with shards found on record no longer offered; none with it; a sharded trigger, finding 37).
  const want = new Map<Job, [number, number][]>();
  for (const d of due) {
    if (!d.limited) continue;
    const items = want.get(d.limited) ?? [];
    const starts = d.claimable?.();
    if (starts) for (const start of starts) items.push([start, 1]);
    else items.push([d.start ?? now, d.want ?? shardsOf(d.limited).length]);
    want.set(d.limited, items);
  }
  if (want.size === 0) {
    s.limits.tickWaits(new Set());
    return undefined;
  }
  const grants = new Map<Job, { r: Reservation; left: number; retryAt: number; waiting?: number }>();
  await Promise.all(
    [...want].map(async ([job, items]) => {
      const order = oldestStarts(items, left);
      const r = await s.limits.reserve(job.spec, order.length, order);
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
          // see those fire times (simulator seed 17 of the fleet limits sweep). And the job's
          // items are looked at, taking nothing, until one has work claimable here now: the
          // oldest such (items come oldest first, `arrange`) is the node's place in line for
          // the job's permits (fleet-limits.ts, waitsFrom). An item's estimated start cannot be
          // the place: a source's cursor far behind its high-water mark, or an entry held for
          // its preferred node, made a node that would claim nothing hold the line for seconds
          // (simulator, mix5 seeds 7 and 19). An index entry is peeked at (entry-peek.ts).
          if (d.cursor) waits(g, (await d.take(0, first)).waiting);
          else if (g.waiting === undefined)
            waits(g, d.claimable ? oldest(d.claimable()) : (await d.take(0, first)).waiting);
          wake(g.retryAt);
          return { used: 0, more: false };
        }
        const taken = await d.take(Math.min(limit, g.left), first);
        g.left -= taken.used;
        // Out of permits, not of slots: what did not fit waits for them.
        if (g.left <= 0 && taken.more) waits(g, taken.waiting);
        return taken;
      },
    };
  };
  return {
    arrange: (rotated, all) => {
      // Stable: items of one start keep `all`'s order (due sources, recoveries, index entries).
      const oldestFirst = all
        .filter((d) => d.limited)
        .sort((a, b) => (a.start ?? now) - (b.start ?? now))
        .values();
      return rotated.map((d) => wrap(d.limited ? oldestFirst.next().value! : d));
    },
    settled: () => {
      for (const [job, g] of grants) {
        s.limits.settled(job.spec, g.r);
        s.limits.waitsFrom(job.spec, 'tick', g.waiting, g.retryAt);
      }
      s.limits.tickWaits(new Set([...grants.keys()].map((job) => job.spec.name)));
    },
  };
}

/**
 * The starts of the first `left` claims of `items` (`[start, claims]`), oldest first: the order a
 * reservation asks in. The index's entries come in start order already (a sort of a sorted run is
 * linear), and no more than `left` starts are listed however many are due.
 */
function oldestStarts(items: [number, number][], left: number): number[] {
  items.sort((a, b) => a[0] - b[0]);
  const order: number[] = [];
  for (const [start, n] of items) {
    if (order.length >= left) break;
    for (let i = 0; i < n && order.length < left; i++) order.push(start);
  }
  return order;
}

/** The oldest of `starts`, if any. */
function oldest(starts: readonly number[] | undefined): number | undefined {
  return starts && starts.length > 0 ? Math.min(...starts) : undefined;
}

/** Notes the start of what a take left waiting for permits (see `Taken`). */
function waits(g: { waiting?: number }, start: number | undefined): void {
  if (start !== undefined) g.waiting = Math.min(g.waiting ?? start, start);
}

/** When the oldest of a job's recoveries (`[key, candidate]`) was to start. */
export function oldestOf(list: readonly [string, Candidate][]): number {
  return Math.min(...list.map(([, c]) => startOf(c)));
}
