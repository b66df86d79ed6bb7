import type { JobSpec } from '../job-options.js';
import { LimitPlace } from './limit-place.js';

/** One limited job on this node. */
export interface Local {
  spec: JobSpec;
  /** Runs of the job whose handler goes on here (every launch counts, recoveries too). */
  held: number;
  /** Granted to claims under way and not launched yet. */
  reserved: number;
  /**
   * Claims whose answer was lost, each holding a permit until its fate is known, as the local
   * monotonic times until which each counts (see FleetLimits.keep).
   */
  kept: number[];
  /** Runs launched here so far (of all kinds): how many of a grant were used (see FleetLimits.settled). */
  launched: number;
  /** Rate starts granted and not used, to take out of the record at the next write (`[at, n]`). */
  unused: [number, number][];
  /** `held + reserved` as this node last stored it, and until when (store time) it counts. */
  stored: number;
  storedUntil: number;
  /** This node's place in line for the job's permits (limit-place.ts). */
  place: LimitPlace;
  /** The starts of runs here waiting for a start in the rate window (fleet-limits.ts `rateStart`). */
  starting: number[];
  /** Until when (store time) their place is held: past the last ask any of them is to make. */
  startHeldUntil: number;
  /** Every node's place in line as this node last read the job's record (limit-record.ts `w`). */
  line?: Readonly<Record<string, [number, number]>> | undefined;
  /** Permits of runs that ended here kept for this node's waiting work, until `spareUntil` (limit-spare.ts). */
  spare: number;
  spareUntil: number;
  /** One write at a time per job: reservations and returns queue behind each other. */
  chain: Promise<unknown>;
  cancelTimer: (() => void) | undefined;
  /** Local monotonic time the armed timer fires at. */
  timerAt: number;
}

/**
 * The permits this node's entry counts: runs going and starts granted, for a concurrency limit;
 * none for a rate limit alone (its record counts starts, not runs: a run's end writes nothing).
 */
export function inUse(l: Local, now: number): number {
  if (!countsRuns(l.spec)) return 0;
  let kept = 0;
  for (const until of l.kept) if (until > now) kept++;
  return l.held + l.reserved + kept + (now < l.spareUntil ? l.spare : 0);
}

/** Whether the job's entry counts its runs: it has a concurrency limit. */
export function countsRuns(spec: JobSpec): boolean {
  return spec.limits?.maxConcurrency !== undefined;
}

/** A limited job's state on this node before its first reservation. */
export function newLocal(spec: JobSpec): Local {
  return {
    spec,
    held: 0,
    reserved: 0,
    kept: [],
    launched: 0,
    unused: [],
    stored: 0,
    storedUntil: 0,
    place: new LimitPlace(),
    starting: [],
    startHeldUntil: 0,
    spare: 0,
    spareUntil: 0,
    chain: Promise.resolve(),
    cancelTimer: undefined,
    timerAt: 0,
  };
}

/** The oldest of `starts` but for one instance of `except` (undefined: none). */
export function oldestBut(starts: readonly number[], except?: number): number | undefined {
  let skipped = except === undefined;
  let best: number | undefined;
  for (const at of starts) {
    if (!skipped && at === except) skipped = true;
    else if (best === undefined || at < best) best = at;
  }
  return best;
}
