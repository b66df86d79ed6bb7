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
 * - No skip without its reason: a skip is borne out by the history, or it is `unjustified-skip` —
 *   an `overlap` skip needs a run of the same overlap gate (job, stored schedule, shard; manual
 *   triggers share the job's gate) that started at or before the fire time and had not finished
 *   by then (or, with the job's `lockAtLeastForMs`, started less than that before it); when the
 *   skip names the run (`by`), that run. A `superseded` skip needs the later fire time it names
 *   (`by`: the queued run that replaced it) to have started — or, itself superseded before it
 *   ran, the fire time that replaced it, and so on: the chain ends in a run or an overlap skip
 *   (history-skips.ts; one named after the gate's last expected fire time is not judged: it
 *   may still be queued); without `by`, any later fire time of the gate that started. A
 *   `misfire` skip needs the fire time to have fallen outside the `healthy` windows: a fire time
 *   some healthy node could claim in time (within `misfireThresholdMs`) is never missed — a
 *   claim granted and never started is recovered, not skipped. An `excluded` skip needs the fire time to match its trigger's
 *   `exclude` list (`exclusions`, with the `calendars` they name). A `removed` skip needs its stored
 *   schedule to have been removed or changed after the fire time (`removals`).
 * - Nothing said missed ran: no occurrence that started (not as a backfill) has a `misfire` skip
 *   on record covering it (`ran-and-skipped`, history-ran-skipped.ts).
 * - No overlap within a gate, for a job whose facts give its `overlap` policy (not `allow`): no
 *   run starts while an earlier run of another occurrence of its gate is going (history-gates.ts).
 * - A fenced effects sink (a write accepted only with a token higher than the last accepted one
 *   for its resource) never accepted a stale token.
 */

import { checkGates } from './history-gates.js';
import {
  type CheckInput,
  type CheckResult,
  type DuplicateKind,
  type FencedWrite,
  occurrenceKey,
  type RunRecord,
} from './history-model.js';
import { checkRanAndSkipped } from './history-ran-skipped.js';
import { checkLost } from './history-skips.js';

export type {
  CheckInput,
  CheckResult,
  DuplicateKind,
  ExpectedOccurrence,
  FencedWrite,
  JobFacts,
  RunRecord,
  SkipRecord,
  Violation,
} from './history-model.js';
export { occurrenceKey } from './history-model.js';

const FAILED: ReadonlySet<string> = new Set(['failed', 'timed-out']);

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
    unjustifiedSkips: 0,
    staleWritesRefused: 0,
    writesAccepted: 0,
    violations: [],
  };

  const byOccurrence = new Map<string, { starts: RunRecord[]; finishes: RunRecord[] }>();
  const seen = new Map<string, RunRecord>();
  /** A finish reported twice: its earlier report (the handler's end), for the overlap check. */
  const endedAt = new Map<RunRecord, number>();
  for (const r of input.records) {
    // The same run may be reported twice (a node's event and the store's history): keep one,
    // lapsed if either report says so. A finish keeps the later report: the history's finishedAt
    // is when the handler ended, the node's event comes once the outcome is stored — until then
    // the run still holds its gate and its in-flight record (a finish held up by a stalled link),
    // and skipping a fire time behind it is fair.
    const id = `${occurrenceKey(r)}|${r.event}|${r.token}|${r.attempt}|${r.node}`;
    const kept = seen.get(id);
    if (kept) {
      if (r.leaseLapsed) kept.leaseLapsed = true;
      if (r.event === 'finish') {
        endedAt.set(kept, Math.min(endedAt.get(kept) ?? kept.at, r.at));
        if (r.at > kept.at) kept.at = r.at;
      }
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
  checkLost(input, byOccurrence, tolerance, result);
  checkRanAndSkipped(input, byOccurrence, result);
  checkGates(input, byOccurrence, endedAt, tolerance, result);
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
