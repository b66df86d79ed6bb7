import { type LimitRecord, WAIT_HOLD_MS } from './limit-record.js';

/**
 * The paths that find a limited job's work waiting for permits: a due tick, claims made outside
 * one (claim/admit.ts), and runs already claimed that wait for a start in a rate window (a retry,
 * a late first start: fleet-limits.ts `rateStart`).
 */
export type WaitPath = 'tick' | 'admit' | 'start';

/**
 * One node's place in line for one limited job's permits (limit-record.ts `w`): per path that
 * found work waiting, `[start, until]` in store time — the earliest start stands for the node —
 * and the place as the node last stored it (or found it stored).
 *
 * Written only when it can matter, as each write is a compare-and-move every node contends for
 * (with each waiting node writing its place at every change, a slow machine's limited job wrote
 * its record twice as often and started half as many runs: simulator,
 * test/simulate-slow-machine seed 4): when it is older than the stored one (or none is stored),
 * or to hold it while it stands; one that moved newer or went away is left to lapse, or goes with
 * a write made anyway.
 */
export class LimitPlace {
  private readonly byPath = new Map<WaitPath, [number, number]>();
  private stored: [number, number] | undefined;

  /** `path` found work waiting from `start` (`undefined`: none), held until `until`; whether that changed anything. */
  set(path: WaitPath, start: number | undefined, until: number): boolean {
    if (start === undefined) return this.byPath.delete(path);
    this.byPath.set(path, [start, until]);
    return true;
  }

  /** Whether `path` found work waiting, and its place still stands at `now` (store time). */
  waits(path: WaitPath, now: number): boolean {
    const p = this.byPath.get(path);
    return p !== undefined && p[1] > now;
  }

  /** Nothing waits here any more (the node stops). */
  clear(): void {
    this.byPath.clear();
  }

  /**
   * The place now: the earliest start of the paths' live places (lapsed ones are dropped), or of
   * all but `except`'s.
   */
  current(now: number, except?: WaitPath): [number, number] | undefined {
    let best: [number, number] | undefined;
    for (const [path, p] of this.byPath) {
      if (p[1] <= now) this.byPath.delete(path);
      else if (path !== except && (best === undefined || p[0] < best[0])) best = p;
    }
    return best;
  }

  /** Whether the place now is to be written: older than the stored one, or it and about to lapse while it stands. */
  moved(now: number): boolean {
    return !holds(this.stored, this.current(now), now);
  }

  /**
   * Puts the place now into `rec` (read as stored, about to be moved on) for `node`; returns
   * whether what was stored already says the same and holds long enough (no write needed for
   * it), and `stored(wrote)` to call once the record was written (`true`) or found good (`false`).
   */
  into(rec: LimitRecord, node: string, now: number): { same: boolean; stored: (wrote: boolean) => void } {
    const found = rec.w?.[node];
    const place = this.current(now);
    if (place) rec.w = { ...rec.w, [node]: place };
    else if (rec.w) delete rec.w[node];
    const live = found !== undefined && found[1] > now ? found : undefined;
    return {
      same: holds(live, place, now),
      stored: (wrote) => {
        this.stored = wrote ? place : live;
      },
    };
  }
}

/** Whether `stored` serves for `place` (see LimitPlace): as old or older, and held long enough when it is the same. */
function holds(
  stored: [number, number] | undefined,
  place: [number, number] | undefined,
  now: number,
): boolean {
  if (place === undefined) return true;
  if (stored === undefined || stored[1] <= now || stored[0] > place[0]) return false;
  return stored[0] < place[0] || stored[1] - now >= WAIT_HOLD_MS / 2 || stored[1] >= place[1];
}
