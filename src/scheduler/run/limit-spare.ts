import { countsRuns, type Local } from './limit-local.js';

/**
 * How long a permit freed by a run's end stays on its node for that node's waiting work (local
 * ms): the due tick it wakes goes at once, so this covers that tick's own store calls.
 */
export const SPARE_MS = 150;

/**
 * Whether this node's oldest waiting work (`start`) is first in line for the job's permits: no
 * other live node's place in line, as this node last read the record (limit-record.ts `w`), is
 * older. Ties are first: occurrences of one start compete as they come.
 */
function firstInLine(l: Local, node: string, start: number | undefined, now: number): boolean {
  if (start === undefined) return false;
  for (const [name, [at, until]] of Object.entries(l.line ?? {}))
    if (name !== node && until > now && at < start) return false;
  return true;
}

/**
 * A run of a job under `maxConcurrency` ended here: its permit stays here as a spare (no return
 * write, no reservation write for the next start) when this node's own work waits first in
 * line — the fleet would grant it here anyway, a round trip or two later. A permit counted from
 * its grant through the claim and start to the handler's end, and went back in a write of its
 * own: under a backlog of short runs the handlers used 1.2 of 2 permits (simulator, mix5's
 * `m5lim`). Not under a rate limit: its window counts starts, each asked for. Returns whether it
 * was kept (the due tick should go now). `now`: store time; `mono`: local monotonic time.
 */
export function keepSpare(l: Local, node: string, now: number, mono: number): boolean {
  if (mono >= l.spareUntil) l.spare = 0;
  if (!countsRuns(l.spec) || l.spec.limits?.rate !== undefined) return false;
  if (!firstInLine(l, node, l.place.current(now)?.[0], now)) return false;
  l.spare++;
  l.spareUntil = mono + SPARE_MS;
  return true;
}

/**
 * Up to `want` spare permits for a reservation whose oldest work starts at `first`, if it is
 * still first in line, counted as reserved; any spare not taken is dropped (it goes back with the
 * next write).
 */
export function takeSpare(
  l: Local,
  node: string,
  want: number,
  first: number | undefined,
  now: number,
  mono: number,
): number {
  if (l.spare <= 0) return 0;
  const n = mono < l.spareUntil && firstInLine(l, node, first, now) ? Math.min(want, l.spare) : 0;
  l.spare = n > 0 ? l.spare - n : 0;
  l.reserved += n;
  return n;
}
