import type { FleetLimitSpec } from './fleet-limit-spec.js';

/**
 * A limited job's record (`lim|<job>|<seq>`, fleet-limits.ts), as JSON:
 *  - `n`: per live node, `[permits in use, until]` — runs going on there plus starts granted and
 *    not launched yet, counted until store time `until` (a node that stops writing drops out);
 *  - `s`: the starts granted in the last rate window, as `[store time, count]` buckets, oldest
 *    first (rateLimit only);
 *  - `w`: per node that waits for permits, `[start, until]` — its place in line: the start time
 *    (fire time plus jitter) of its oldest work the fleet did not grant, held until store time
 *    `until`; newer work on other nodes yields to it (see `reserveIn`).
 */
export interface LimitRecord {
  n: Record<string, [number, number]>;
  s?: [number, number][];
  w?: Record<string, [number, number]>;
}

/**
 * How long a waiter's place counts past the instant it asks again (its `retryAt`, or its next
 * poll): a waiter that died, stalled or found its work taken elsewhere stops holding newer work
 * back after this.
 */
export const WAIT_HOLD_MS = 1_000;

/** Starts are kept in at most this many buckets: older ones merge (counted longer, never shorter). */
const MAX_BUCKETS = 64;

/**
 * How many of `want` new starts the fleet allows now (store time `now` ± `margin`), with this node's entry
 * counting `mine` permits in use; the record is pruned (entries past `until`, starts out of the
 * window) and, for a rate limit, the grant's starts added to it. `retryAt`: when the rest may be
 * asked for again — the oldest start's window end for a rate limit; `undefined` when only the
 * concurrency limit holds them (permits come back as runs end, at no known time).
 *
 * Rate: at most `max` starts granted in any window of `per` (a sliding window, counted at the
 * grant instants). Merging buckets keeps a start counted until its window ends or later.
 *
 * Order (`order`, when given: the start times of the `want` wanted, oldest first): what waits is
 * started oldest first across the fleet, not by who asks first. Of the wanted, only those no
 * newer than every other live waiter's place (`w`) are granted — the permits that free up go to
 * the node whose work waited longest, at its next ask; all of them when this node's own place is
 * the oldest (its order is an estimate, its place what its last tick found waiting). Starts equal
 * to a waiter's compete as before (one occurrence's shards on several nodes). Without `order`
 * nothing yields. Places are written by their nodes (limit-place.ts); here other nodes' lapsed
 * ones are pruned.
 *
 * `local` (with `order`): this node's place as it stands for this ask (`own`), instead of the
 * stored one, and the oldest of its other work waiting apart from it (`ahead`), which this ask
 * yields to as to another node's place. A node's stored place is the oldest of all its waiting
 * work: a retry waiting for a start in the rate window (fleet-limits.ts `rateStart`) holds it, and
 * the node's own due tick must not take the window's starts ahead of that retry on its strength.
 */
export function reserveIn(
  rec: LimitRecord,
  now: number,
  node: string,
  limits: FleetLimitSpec,
  mine: number,
  want: number,
  margin = 0,
  order?: readonly number[],
  local?: { own: number | undefined; ahead: number | undefined },
): { granted: number; retryAt: number | undefined; at: number } {
  // `now` is this node's estimate of the store's clock, within ± `margin`: what ends is judged
  // by the earliest the true time can be, a start is stamped with the latest. Each node's
  // estimate differs (by its last sample's round trip, hundreds of ms on a loaded machine): so
  // a start counts at least `per` of true time, whoever judges it.
  const early = now - margin;
  const stamp = now + margin;
  let inUse = mine;
  for (const [name, [count, until]] of Object.entries(rec.n)) {
    if (name === node) continue;
    if (until <= early) delete rec.n[name];
    else inUse += count;
  }
  let granted = want;
  let first = Number.POSITIVE_INFINITY;
  let own = Number.POSITIVE_INFINITY;
  for (const [name, [at, until]] of Object.entries(rec.w ?? {})) {
    if (until <= early) {
      if (name !== node) delete rec.w![name];
    } else if (name === node) own = at;
    else first = Math.min(first, at);
  }
  if (rec.w && Object.keys(rec.w).length === 0) delete rec.w;
  if (local) {
    own = local.own ?? Number.POSITIVE_INFINITY;
    if (local.ahead !== undefined) first = Math.min(first, local.ahead);
  }
  if (order) {
    let older = 0;
    while (older < granted && Math.min(order[older] ?? Number.NEGATIVE_INFINITY, own) <= first) older++;
    granted = older;
  }
  let retryAt: number | undefined;
  if (limits.maxConcurrency !== undefined)
    granted = Math.min(granted, Math.max(0, limits.maxConcurrency - inUse));
  const rate = limits.rate;
  if (rate) {
    const starts = (rec.s ?? []).filter(([at]) => at > early - rate.perMs);
    let inWindow = 0;
    for (const [, count] of starts) inWindow += count;
    const room = Math.max(0, rate.max - inWindow);
    if (room < granted) {
      granted = room;
      // Room for one more once enough of the oldest starts leave the window.
      let freed = 0;
      for (const [at, count] of starts) {
        freed += count;
        if (rate.max - inWindow + freed > 0) {
          retryAt = at + rate.perMs + 2 * margin;
          break;
        }
      }
    }
    if (granted > 0) {
      const last = starts.at(-1);
      if (last && last[0] === stamp) last[1] += granted;
      else starts.push([stamp, granted]);
    }
    while (starts.length > MAX_BUCKETS) {
      const [a, b] = [starts[0]!, starts[1]!];
      starts.splice(0, 2, [b[0], a[1] + b[1]]);
    }
    rec.s = starts;
  }
  return { granted, retryAt, at: stamp };
}

/**
 * Takes starts granted and not used out of the record's rate window (`[grant time, count]`): from
 * the bucket of that grant time, if it is still kept as such (a merged bucket keeps them: counted
 * too long, never too short).
 */
export function giveBack(rec: LimitRecord, unused: readonly [number, number][]): void {
  if (!rec.s || unused.length === 0) return;
  for (const [at, n] of unused) {
    const bucket = rec.s.find(([t]) => t === at);
    if (bucket) bucket[1] = Math.max(0, bucket[1] - n);
  }
  rec.s = rec.s.filter(([, count]) => count > 0);
}
