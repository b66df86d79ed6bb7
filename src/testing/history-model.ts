/** The history checker's records, input and result (history-check.ts judges them). */
import type { Exclusion } from '../schedule/exclude.js';
import type { RunSource, RunStatus } from '../scheduler/types.js';

/** One start or finish of one run, as a node or the store's history saw it. */
export interface RunRecord {
  /** The node that ran it. */
  node: string;
  /** The job's name. */
  job: string;
  /** The stored schedule, if any. */
  scheduleId?: string;
  /** Nominal fire time, epoch ms. */
  fireTime: number;
  /** The shard index, for a sharded job. */
  shard?: number;
  /** 1 for the first run of the occurrence, then 2, 3… */
  attempt: number;
  /** The fencing token of the run's claim. */
  token: number;
  /** Why it ran (`schedule`, `retry`, `recover`, …). */
  source: RunSource;
  /** Whether this record is the run's start or its finish. */
  event: 'start' | 'finish';
  /** For `finish`: how the run ended. */
  status?: RunStatus;
  /**
   * For `finish`: the outcome was stored only after the run's lease had lapsed (the scheduler's
   * `leaseLapsed`), so a recovery after it is legal even when it succeeded — at-least-once.
   */
  leaseLapsed?: boolean;
  /** When it happened, epoch ms (one clock for all records: the store's, or one host's). */
  at: number;
}

/** Fire times skipped on purpose: a misfire policy's skip span, or an overlap skip (from = to). */
export interface SkipRecord {
  /** The job's name. */
  job: string;
  /** The stored schedule, if any. */
  scheduleId?: string;
  /** The shard index, for a sharded job. */
  shard?: number;
  /** First and last skipped fire time, epoch ms, inclusive. Every fire time in between counts. */
  from: number;
  /** See `from`. */
  to: number;
  /** Why the fire times were skipped (the scheduler's `SkipReason`). */
  reason: 'misfire' | 'overlap' | 'superseded' | 'excluded' | 'paused' | 'removed';
  /** The run it overlapped (`overlap`), or the queued fire time that replaced it (`superseded`). */
  by?: {
    /** That run's fire time, epoch ms. */
    fireTime: number;
    /** That run's node, when known. */
    node?: string;
    /** That run's fencing token, when known. */
    token?: number;
  };
}

/** One occurrence that should have run (or been skipped on record). */
export interface ExpectedOccurrence {
  /** The job's name. */
  job: string;
  /** The stored schedule, if any. */
  scheduleId?: string;
  /** Nominal fire time, epoch ms. */
  fireTime: number;
  /** The shard index, for a sharded job. */
  shard?: number;
}

/** What the checker needs to know about a job's policy. */
export interface JobFacts {
  /** The job's name. */
  job: string;
  /** Lease length (`lockAtMostFor`) in ms: a recovery before the earlier run's start + this is early. */
  leaseMs: number;
  /** `lockAtLeastFor` in ms (default 0): a fire time this soon after a run's start may be skipped for overlap. */
  lockAtLeastForMs?: number;
  /** `misfireThreshold` in ms (default 1,000): how long a healthy node has to claim a fire time. */
  misfireThresholdMs?: number;
  /**
   * The job's `overlap` policy: given, and not `allow`, no two runs of one overlap gate may go side
   * by side (an `overlap` violation). Absent: not judged.
   */
  overlap?: 'skip' | 'queue' | 'queue-all' | 'replace' | 'allow';
}

/** One attempted write to a fenced sink, in the order the sink decided. */
export interface FencedWrite {
  /** What was written to (tokens are compared per resource). */
  resource: string;
  /** The fencing token the write carried. */
  token: number;
  /** Whether the sink accepted it. */
  accepted: boolean;
}

/** What `checkHistory` judges. */
export interface CheckInput {
  /** Every run start and finish every node saw. */
  records: readonly RunRecord[];
  /** The policy of every job the records name (a job without facts is an `unknown-job` violation). */
  jobs: readonly JobFacts[];
  /** Fire times skipped on purpose (from `skipped`/`misfired` events or history). */
  skips?: readonly SkipRecord[];
  /** Occurrences that should have run or been skipped on record; omit to skip the lost-fire-time check. */
  expected?: readonly ExpectedOccurrence[];
  /** Windows (epoch ms, inclusive) in which at least one node was healthy; default: always. */
  healthy?: readonly {
    /** Start of the window, epoch ms. */
    from: number;
    /** End of the window, epoch ms. */
    to: number;
  }[];
  /**
   * When stored schedules were removed (`schedules.remove`) or replaced by an upsert that changed
   * them (epoch ms): a `removed` skip needs one of its schedule after its fire time. Absent: none.
   */
  removals?: readonly {
    /** The job's name. */
    job: string;
    /** The stored schedule's id. */
    scheduleId: string;
    /** When it was removed or replaced, epoch ms. */
    at: number;
  }[];
  /** Writes to a fenced sink, in the order the sink decided them. */
  writes?: readonly FencedWrite[];
  /** Slack for `at` values taken on different processes' clocks (default 250 ms). */
  toleranceMs?: number;
  /**
   * The pauses during the history: of a job (no `scheduleId`: its own trigger and all its stored
   * schedules) or of one stored schedule, from `from` to `to` (epoch ms; `to` absent: not resumed).
   * A `paused` skip is borne out only by a pause of its job or schedule that its fire time falls in
   * (give or take the misfire threshold and a few seconds: the span runs to the first read after
   * the resume). Without `pauses`, every `paused` skip is unjustified.
   */
  pauses?: readonly {
    /** The job's name. */
    job: string;
    /** The stored schedule; absent for a pause of the whole job. */
    scheduleId?: string;
    /** When it was paused, epoch ms. */
    from: number;
    /** When it was resumed, epoch ms; absent while still paused. */
    to?: number;
  }[];
  /**
   * The `exclude` lists of the triggers (the job's own: no `scheduleId`): an `excluded` skip is
   * borne out only when its fire time matches its trigger's list. `timezone`: the trigger's cron
   * zone (where calendars without a zone are read).
   */
  exclusions?: readonly {
    /** The job's name. */
    job: string;
    /** The stored schedule; absent for the job's own trigger. */
    scheduleId?: string;
    /** The trigger's `exclude` list, as given. */
    exclude: readonly Exclusion[];
    /** The trigger's cron time zone, if any. */
    timezone?: string;
  }[];
  /**
   * The calendars the exclusions name. One id may be given once per version it had during the
   * history (a calendar changed mid-run): a fire time excluded by any of them is borne out.
   */
  calendars?: readonly {
    /** The calendar's id. */
    id: string;
    /** Its dates, `YYYY-MM-DD`. */
    dates: readonly string[];
    /** Its time zone, if any. */
    timezone?: string;
  }[];
}

/**
 * How an occurrence ran twice against the rules: `concurrent` (a second run started while the first
 * was running); `sequential-after-success` (it ran again after a success); `sequential-after-finish`
 * (it ran again after a failure, but not as a legal retry or recovery); `recovery-without-expiry`
 * (a recovery before the earlier run's lease can have expired, or after it succeeded).
 */
export type DuplicateKind =
  | 'concurrent'
  | 'sequential-after-success'
  | 'sequential-after-finish'
  | 'recovery-without-expiry';

/** A broken guarantee, with a sentence saying what happened (`message`). */
export type Violation =
  | {
      /** An occurrence ran twice against the rules. */
      kind: 'duplicate';
      /** How (see {@link DuplicateKind}). */
      duplicate: DuplicateKind;
      /** The occurrence, as {@link occurrenceKey} writes it. */
      occurrence: string;
      /** What happened, in one sentence. */
      message: string;
    }
  | {
      /** A run started with a token not above an earlier run's of the same occurrence. */
      kind: 'stale-token';
      /** The occurrence, as {@link occurrenceKey} writes it. */
      occurrence: string;
      /** What happened, in one sentence. */
      message: string;
    }
  | {
      /** An expected occurrence neither started nor was skipped on record, while a node was healthy. */
      kind: 'lost-fire-time';
      /** The occurrence, as {@link occurrenceKey} writes it. */
      occurrence: string;
      /** What happened, in one sentence. */
      message: string;
    }
  | {
      /** An occurrence that started, while a `misfire` skip on record says it was missed. */
      kind: 'ran-and-skipped';
      /** The occurrence, as {@link occurrenceKey} writes it. */
      occurrence: string;
      /** What happened, in one sentence. */
      message: string;
    }
  | {
      /** A recorded skip that the history does not bear out. */
      kind: 'unjustified-skip';
      /** The occurrence, as {@link occurrenceKey} writes it. */
      occurrence: string;
      /** What happened, in one sentence. */
      message: string;
    }
  | {
      /** The fenced sink accepted a write whose token was not above the last accepted one. */
      kind: 'stale-write-accepted';
      /** The resource written to. */
      resource: string;
      /** What happened, in one sentence. */
      message: string;
    }
  | {
      /** Two runs of one overlap gate went side by side, under a policy that runs them one at a time. */
      kind: 'overlap';
      /** The later run's occurrence, as {@link occurrenceKey} writes it. */
      occurrence: string;
      /** What happened, in one sentence. */
      message: string;
    }
  | {
      /** Records name a job that `jobs` has no facts for. */
      kind: 'unknown-job';
      /** The occurrence, as {@link occurrenceKey} writes it. */
      occurrence: string;
      /** What happened, in one sentence. */
      message: string;
    };

/** What `checkHistory` found: counts, and every violation (none: the history is sound). */
export interface CheckResult {
  /** Distinct occurrences started at least once. */
  occurrences: number;
  /** Legal recoveries (a run re-started after its node died or its lease expired). */
  recoveries: number;
  /** Legal retries (a run re-started after a failed or timed-out attempt). */
  retries: number;
  /** Duplicate runs, by kind (each is also a violation). */
  duplicates: Record<DuplicateKind, number>;
  /** Expected occurrences with neither a start nor a recorded skip. */
  misses: number;
  /** Expected occurrences covered by a recorded skip that the history bears out. */
  skipped: number;
  /** Expected occurrences never started whose only skips the history does not bear out. */
  unjustifiedSkips: number;
  /** Writes the fenced sink refused for a stale token (the fencing working). */
  staleWritesRefused: number;
  /** Writes the fenced sink accepted. */
  writesAccepted: number;
  /** Every broken guarantee; empty when the history is sound. */
  violations: Violation[];
}

/** Whether a skip record covers an occurrence: its trigger, its shard (or every shard), its fire time within the span. */
export function skipCovers(
  s: SkipRecord,
  o: { job: string; scheduleId?: string | undefined; fireTime: number; shard?: number | undefined },
): boolean {
  return (
    s.job === o.job &&
    s.scheduleId === o.scheduleId &&
    (s.shard === undefined || s.shard === o.shard) &&
    s.from <= o.fireTime &&
    o.fireTime <= s.to
  );
}

/** The occurrence a record belongs to, as one readable string. */
export function occurrenceKey(o: {
  job: string;
  scheduleId?: string | undefined;
  fireTime: number;
  shard?: number | undefined;
}): string {
  const parts = [o.job];
  if (o.scheduleId !== undefined) parts.push(`schedule ${o.scheduleId}`);
  parts.push(new Date(o.fireTime).toISOString());
  if (o.shard !== undefined) parts.push(`shard ${o.shard}`);
  return parts.join(' · ');
}
