/**
 * What the simulation's checker (checker.ts, checker-backfills.ts) reports, and what it is told
 * about each job: its fire times, stored schedules, exclusions, pauses and backfills.
 */
import type { CheckedSchedule } from './stored.js';

/**
 * A guarantee the simulation found broken: `overlap` (a second run of an occurrence while the
 * first was still going), `gate-overlap` (two runs of one overlap gate side by side, under a policy
 * other than `allow`: checker-gates.ts), `rerun-after-success`, `token-order` (tokens went down), `attempt-order`,
 * `lost-fire-time` (nobody handled a fire time), `unfinished` (a started occurrence never
 * succeeded), `unjustified-skip` (a skip for overlap with no run to overlap, an `excluded` skip no
 * exclusion bears out, a `paused` skip no pause bears out), `unexpected-fire-time` (a stored
 * schedule ran at a time it does not fire, or a backfill ran a fire time no backfill's range
 * holds), `too-many-runs` (a schedule's `maxRuns`), `backfill-rerun` (a backfill ran a fire time
 * that had run, or it ran again after its backfill run), `setup-failed` (a pause, resume or
 * backfill call of the options failed), `wrong-start` (a jittered job trigger's run told a
 * `scheduledAt` other than its fire time's offset, or started before it: checker-starts.ts), `ran-and-skipped` (a fire time said skipped as missed
 * that also ran: checker-misfires.ts), `stuck` (virtual time stopped advancing: a busy loop; see
 * MAX_TIMERS_AT_ONE_INSTANT). See `check`.
 */
export type ViolationKind =
  | 'overlap'
  | 'gate-overlap'
  | 'rerun-after-success'
  | 'token-order'
  | 'attempt-order'
  | 'lost-fire-time'
  | 'unfinished'
  | 'unjustified-skip'
  | 'unexpected-fire-time'
  | 'too-many-runs'
  | 'backfill-rerun'
  | 'setup-failed'
  | 'wrong-start'
  | 'ran-and-skipped'
  | 'stuck';

/** One broken guarantee, with a sentence saying what happened. */
export interface Violation {
  /** Which guarantee (see {@link ViolationKind}). */
  kind: ViolationKind;
  /** The occurrence (`job@+12.000s#shard`) or job concerned. */
  occ: string;
  /** What happened. */
  message: string;
}

/**
 * One `scheduler.backfill()` call of a simulation, as the checker judges it (sim-backfills.ts):
 * the fire times the call covers — those of its trigger in [from, to) that the real call takes,
 * so before the store's clock at the call minus the job's misfire threshold and jitter.
 */
export interface CheckedBackfill {
  /** The stored schedule backfilled; absent: the job's own trigger. */
  scheduleId?: string;
  /** Virtual ms of the call. */
  at: number;
  /** The range as given, store ms, [from, to). */
  from: number;
  /** See `from`. */
  to: number;
  /** The fire times (store ms) the call covers: each must have run once by the end. */
  fireTimes: number[];
  /**
   * Whether "each has run by the end" is judged (with the other liveness checks): the call came
   * inside the checked window, every pause of its trigger was resumed by the window's end, and
   * its stored schedule stays in the store (a removal drops its queued runs).
   */
  judged: boolean;
}

/** What the checker needs to know about a job to judge "lost" and "unfinished". */
export interface CheckedJob {
  name: string;
  /** Fire times of the job's own trigger inside the checked window (store ms). */
  fireTimes: number[];
  /** The job's stored schedules: what each must run, and may run (stored.ts). */
  schedules?: readonly CheckedSchedule[];
  shards: (number | undefined)[];
  /** `recover` on and a handler that never fails: every started occurrence must end succeeded. */
  mustFinish: boolean;
  /**
   * With `jitter` on the job's own trigger: when its fire time `fireTime` (store ms) is to start —
   * the fire time plus the offset every node computes (checker-starts.ts). Absent: no jitter.
   */
  startOf?: (fireTime: number) => number;
  /** The job's overlap policy: under any but `allow` the runs of one gate never overlap (checker-gates.ts). */
  overlap?: 'skip' | 'queue' | 'queue-all' | 'replace' | 'allow';
  /**
   * Whether its trigger (the job's own: no `scheduleId`) excludes `fireTime` (store ms): an
   * `excluded` skip is borne out only then. Absent: no exclusions.
   */
  excluded?: (scheduleId: string | undefined, fireTime: number) => boolean;
  /**
   * Whether a simulated pause of the job, or of its stored schedule `scheduleId`, covers
   * `fireTime` (store ms), as the public history checker reads `input.pauses` (history-skips.ts):
   * a `paused` skip is borne out only then. Absent: no pauses.
   */
  paused?: (scheduleId: string | undefined, fireTime: number) => boolean;
  /**
   * Whether `fireTime` falls in a pause that was not resumed by the end of the checked window: it
   * may be neither run nor on record (a `paused` span is written after the resume), so it is not
   * required. Absent: no such pause.
   */
  pausedToEnd?: (scheduleId: string | undefined, fireTime: number) => boolean;
  /**
   * Whether the version of stored schedule `scheduleId` that held `fireTime` (store ms) was removed,
   * or replaced by a changed upsert, after it (and by `by`, store ms, when given): a `removed` skip
   * is borne out only then (a page claimed the fire time and never started; its schedule was gone
   * when the page was taken over).
   */
  removedAfter?: (scheduleId: string | undefined, fireTime: number, by?: number) => boolean;
  /**
   * How long after a run's start its recovery may come (store ms: the longest lease, the longest
   * run, two polls, a lease more for a takeover whose reply was lost, and slack for stalls): a
   * run unfinished because its schedule was removed or changed is excused only when that came
   * within this of its start (`unfinished`).
   */
  recoverWithinMs?: number;
  /** The job's `scheduler.backfill()` calls (sim-backfills.ts). */
  backfills?: readonly CheckedBackfill[];
  /**
   * (Virtual ms) with `mustFinish`, an occurrence whose first run started after this has no time
   * left to finish before the end and is not judged `unfinished`: a fire time that waited behind
   * its gate (a claim that never started held it) runs late, after the other waiting ones.
   */
  finishBy?: number;
}

/** The misfire spans' key: a job's own trigger, or one of its stored schedules. */
export function streamOf(job: string, scheduleId: string | undefined): string {
  return scheduleId === undefined ? job : `${job}/${scheduleId}`;
}
