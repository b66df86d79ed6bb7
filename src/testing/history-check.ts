/**
 * A history checker in the manner of Jepsen's: given what every node saw (run starts and
 * finishes with their fencing tokens), what was skipped on purpose, and what should have run, it
 * reports every broken guarantee with a sentence saying what happened. Pure: no store, no vitest.
 *
 * Guarantees checked, per occurrence `(job, scheduleId, fireTime, shard)`:
 * - At most one run, except the documented second runs: a retry (`source: 'retry'`, after a
 *   failed or timed-out attempt, attempt + 1) and a recovery (`source: 'recover'`, attempt + 1, a
 *   higher token, and only once the earlier run's lease can have expired — `leaseMs` after its
 *   start — or it was recorded abandoned; never after a success, unless that success was stored
 *   only after its lease lapsed, `leaseLapsed`). Anything else is a duplicate, classed by kind.
 * - Tokens grow: in the order runs started, each token is higher than every earlier one.
 * - No fire time lost: every expected occurrence has a start or a recorded skip (overlap skip,
 *   misfire skip), unless it fell due while no node was healthy.
 * - A fenced effects sink (a write accepted only with a token higher than the last accepted one
 *   for its resource) never accepted a stale token.
 */
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
  reason: 'misfire' | 'overlap';
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
  /** Expected occurrences covered by a recorded skip. */
  skipped: number;
  staleWritesRefused: number;
  writesAccepted: number;
  violations: Violation[];
}

const FAILED: ReadonlySet<string> = new Set(['failed', 'timed-out']);

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

const describeRun = (r: RunRecord) =>
  `attempt ${r.attempt} token ${r.token} (${r.source}) on ${r.node} at ${new Date(r.at).toISOString()}`;

/**
 * Checks a run history against oncely's guarantees; the result counts what happened and lists
 * every violation.
 *
 * @example
 * import { checkHistory } from 'oncely/testing';
 * const result = checkHistory({ records, jobs: [{ job: 'report', leaseMs: 30_000 }] });
 * if (result.violations.length > 0) throw new Error(result.violations.map((v) => v.message).join('\n'));
 */
export function checkHistory(input: CheckInput): CheckResult {
  const tolerance = input.toleranceMs ?? 250;
  const facts = new Map(input.jobs.map((j) => [j.job, j]));
  const result: CheckResult = {
    occurrences: 0,
    recoveries: 0,
    retries: 0,
    duplicates: {
      concurrent: 0,
      'sequential-after-success': 0,
      'sequential-after-finish': 0,
      'recovery-without-expiry': 0,
    },
    misses: 0,
    skipped: 0,
    staleWritesRefused: 0,
    writesAccepted: 0,
    violations: [],
  };

  const byOccurrence = new Map<string, { starts: RunRecord[]; finishes: RunRecord[] }>();
  const seen = new Map<string, RunRecord>();
  for (const r of input.records) {
    // The same run may be reported twice (a node's event and the store's history): keep one,
    // lapsed if either report says so.
    const id = `${occurrenceKey(r)}|${r.event}|${r.token}|${r.attempt}|${r.node}`;
    const kept = seen.get(id);
    if (kept) {
      if (r.leaseLapsed) kept.leaseLapsed = true;
      continue;
    }
    const own = { ...r };
    seen.set(id, own);
    const key = occurrenceKey(r);
    let group = byOccurrence.get(key);
    if (!group) {
      group = { starts: [], finishes: [] };
      byOccurrence.set(key, group);
    }
    (own.event === 'start' ? group.starts : group.finishes).push(own);
  }

  for (const [key, { starts, finishes }] of byOccurrence) {
    if (starts.length === 0) continue;
    result.occurrences += 1;
    const job = facts.get(starts[0]!.job);
    if (!job) {
      result.violations.push({
        kind: 'unknown-job',
        occurrence: key,
        message: `${key}: no JobFacts for job ${starts[0]!.job} (give its leaseMs in jobs)`,
      });
      continue;
    }
    checkTokens(key, starts, result);
    checkRuns(key, starts, finishes, job.leaseMs, tolerance, result);
  }
  checkLost(input, byOccurrence, result);
  checkWrites(input.writes ?? [], result);
  return result;
}

/** In start order, each token is higher than every token before it. */
function checkTokens(key: string, starts: RunRecord[], result: CheckResult): void {
  const inTime = [...starts].sort((a, b) => a.at - b.at || a.attempt - b.attempt);
  let highest: RunRecord | undefined;
  for (const s of inTime) {
    if (highest && s.token <= highest.token) {
      result.violations.push({
        kind: 'stale-token',
        occurrence: key,
        message: `${key}: ${describeRun(s)} started with a token not above ${describeRun(highest)}`,
      });
    }
    if (!highest || s.token > highest.token) highest = s;
  }
}

/** Each run after the first must be a legal retry or recovery of the one before it (token order). */
function checkRuns(
  key: string,
  starts: RunRecord[],
  finishes: RunRecord[],
  leaseMs: number,
  tolerance: number,
  result: CheckResult,
): void {
  const ordered = [...starts].sort((a, b) => a.token - b.token || a.attempt - b.attempt || a.at - b.at);
  const finishOf = (s: RunRecord) =>
    finishes.find((f) => f.token === s.token && f.attempt === s.attempt && f.node === s.node) ??
    finishes.find((f) => f.token === s.token && f.attempt === s.attempt);
  for (let i = 1; i < ordered.length; i++) {
    const prev = ordered[i - 1]!;
    const next = ordered[i]!;
    const prevEnd = finishOf(prev);
    const nextAttempt = next.attempt === prev.attempt + 1 && next.token > prev.token;
    const endedBefore = prevEnd !== undefined && prevEnd.at <= next.at + tolerance;
    if (next.source === 'retry' && nextAttempt && endedBefore && FAILED.has(prevEnd.status ?? '')) {
      result.retries += 1;
      continue;
    }
    if (next.source === 'recover' && nextAttempt) {
      const abandoned = endedBefore && prevEnd.status === 'abandoned';
      const expired = next.at >= prev.at + leaseMs - tolerance;
      // A success stored only after its lease lapsed did not close the occurrence in time.
      const succeededFirst = endedBefore && prevEnd.status === 'succeeded' && !prevEnd.leaseLapsed;
      if ((abandoned || expired) && !succeededFirst) {
        result.recoveries += 1;
        continue;
      }
      const why = succeededFirst
        ? `after it had succeeded`
        : `${Math.round(next.at - prev.at)} ms after it started, before its ${leaseMs} ms lease can have expired`;
      duplicate(
        result,
        'recovery-without-expiry',
        key,
        `${describeRun(next)} recovered ${describeRun(prev)} ${why}`,
      );
      continue;
    }
    if (!endedBefore) {
      duplicate(
        result,
        'concurrent',
        key,
        `${describeRun(next)} started while ${describeRun(prev)} was running`,
      );
    } else if (prevEnd.status === 'succeeded') {
      duplicate(
        result,
        'sequential-after-success',
        key,
        `${describeRun(next)} ran again after ${describeRun(prev)} succeeded at ${new Date(prevEnd.at).toISOString()}`,
      );
    } else {
      duplicate(
        result,
        'sequential-after-finish',
        key,
        `${describeRun(next)} ran again after ${describeRun(prev)} ended ${prevEnd.status ?? '?'}, not as a legal retry or recovery`,
      );
    }
  }
}

function duplicate(result: CheckResult, kind: DuplicateKind, key: string, message: string): void {
  result.duplicates[kind] += 1;
  result.violations.push({
    kind: 'duplicate',
    duplicate: kind,
    occurrence: key,
    message: `${key}: ${message}`,
  });
}

/** Every expected occurrence (in a healthy window) has a start or a recorded skip. */
function checkLost(
  input: CheckInput,
  byOccurrence: Map<string, { starts: RunRecord[] }>,
  result: CheckResult,
): void {
  const healthy = input.healthy;
  const skips = input.skips ?? [];
  for (const e of input.expected ?? []) {
    if ((byOccurrence.get(occurrenceKey(e))?.starts.length ?? 0) > 0) continue;
    const skip = skips.find(
      (s) =>
        s.job === e.job &&
        s.scheduleId === e.scheduleId &&
        (s.shard === undefined || s.shard === e.shard) &&
        s.from <= e.fireTime &&
        e.fireTime <= s.to,
    );
    if (skip) {
      result.skipped += 1;
      continue;
    }
    if (healthy && !healthy.some((w) => w.from <= e.fireTime && e.fireTime <= w.to)) continue;
    result.misses += 1;
    result.violations.push({
      kind: 'lost-fire-time',
      occurrence: occurrenceKey(e),
      message: `${occurrenceKey(e)}: fell due while a node was healthy, yet never started and no skip was recorded`,
    });
  }
}

/** Replays the sink's decisions: an accepted write must carry a token above the last accepted one. */
function checkWrites(writes: readonly FencedWrite[], result: CheckResult): void {
  const last = new Map<string, number>();
  for (const w of writes) {
    const before = last.get(w.resource);
    if (!w.accepted) {
      result.staleWritesRefused += 1;
      continue;
    }
    result.writesAccepted += 1;
    if (before !== undefined && w.token <= before) {
      result.violations.push({
        kind: 'stale-write-accepted',
        resource: w.resource,
        message: `${w.resource}: a write with token ${w.token} was accepted after one with token ${before}`,
      });
    }
    last.set(w.resource, Math.max(before ?? w.token, w.token));
  }
}

/** The violations as one readable block (empty string when there are none). */
export function formatViolations(result: CheckResult): string {
  return result.violations.map((v) => `${v.kind}: ${v.message}`).join('\n');
}
