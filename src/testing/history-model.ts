/** The history checker's records, input and result (history-check.ts judges them). */
import type { RunSource, RunStatus } from '../scheduler/types.js';

/** One start or finish of one run, as a node or the store's history saw it. */
export interface RunRecord {
  node: string;
  job: string;
  scheduleId?: string;
  /** Nominal fire time, epoch ms. */
  fireTime: number;
  shard?: number;
  attempt: number;
  token: number;
  source: RunSource;
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
  job: string;
  scheduleId?: string;
  shard?: number;
  /** First and last skipped fire time, epoch ms, inclusive. Every fire time in between counts. */
  from: number;
  to: number;
  reason: 'misfire' | 'overlap' | 'superseded';
  /** The run it overlapped (`overlap`), or the queued fire time that replaced it (`superseded`). */
  by?: { fireTime: number; node?: string; token?: number };
}

/** One occurrence that should have run (or been skipped on record). */
export interface ExpectedOccurrence {
  job: string;
  scheduleId?: string;
  fireTime: number;
  shard?: number;
}

/** What the checker needs to know about a job's policy. */
export interface JobFacts {
  job: string;
  /** Lease length (`lockAtMostFor`) in ms: a recovery before the earlier run's start + this is early. */
  leaseMs: number;
  /** `lockAtLeastFor` in ms (default 0): a fire time this soon after a run's start may be skipped for overlap. */
  lockAtLeastForMs?: number;
  /** `misfireThreshold` in ms (default 1,000): how long a healthy node has to claim a fire time. */
  misfireThresholdMs?: number;
}

/** One attempted write to a fenced sink, in the order the sink decided. */
export interface FencedWrite {
  resource: string;
  token: number;
  accepted: boolean;
}

export interface CheckInput {
  records: readonly RunRecord[];
  jobs: readonly JobFacts[];
  skips?: readonly SkipRecord[];
  expected?: readonly ExpectedOccurrence[];
  /** Windows (epoch ms, inclusive) in which at least one node was healthy; default: always. */
  healthy?: readonly { from: number; to: number }[];
  writes?: readonly FencedWrite[];
  /** Slack for `at` values taken on different processes' clocks (default 250 ms). */
  toleranceMs?: number;
}

export type DuplicateKind =
  | 'concurrent'
  | 'sequential-after-success'
  | 'sequential-after-finish'
  | 'recovery-without-expiry';

export type Violation =
  | { kind: 'duplicate'; duplicate: DuplicateKind; occurrence: string; message: string }
  | { kind: 'stale-token'; occurrence: string; message: string }
  | { kind: 'lost-fire-time'; occurrence: string; message: string }
  | { kind: 'unjustified-skip'; occurrence: string; message: string }
  | { kind: 'stale-write-accepted'; resource: string; message: string }
  | { kind: 'unknown-job'; occurrence: string; message: string };

export interface CheckResult {
  /** Distinct occurrences started at least once. */
  occurrences: number;
  recoveries: number;
  retries: number;
  duplicates: Record<DuplicateKind, number>;
  /** Expected occurrences with neither a start nor a recorded skip. */
  misses: number;
  /** Expected occurrences covered by a recorded skip that the history bears out. */
  skipped: number;
  /** Expected occurrences never started whose only skips the history does not bear out. */
  unjustifiedSkips: number;
  staleWritesRefused: number;
  writesAccepted: number;
  violations: Violation[];
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
