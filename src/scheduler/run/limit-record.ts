import type { FleetLimitSpec } from './fleet-limit-spec.js';

/**
 * A limited job's record (`lim|<job>|<seq>`, fleet-limits.ts), as JSON:
 *  - `n`: per live node, `[permits in use, until]` — runs going on there plus starts granted and
 *    not launched yet, counted until store time `until` (a node that stops writing drops out);
 *  - `s`: the starts granted in the last rate window, as `[store time, count]` buckets, oldest
 *    first (rateLimit only).
 */
export interface LimitRecord {
  n: Record<string, [number, number]>;
  s?: [number, number][];
}

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
 */
export function reserveIn(
  rec: LimitRecord,
  now: number,
  node: string,
  limits: FleetLimitSpec,
  mine: number,
  want: number,
  margin = 0,
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
