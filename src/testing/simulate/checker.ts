import { gateOf } from '../../scheduler/keys.js';
import { checkBackfillLiveness, checkBackfillRuns } from './checker-backfills.js';
import { checkGates } from './checker-gates.js';
import { checkMisfireSkips } from './checker-misfires.js';
import { checkStarts } from './checker-starts.js';
import { supersededJudge } from './checker-superseded.js';
import { type CheckedJob, streamOf, type Violation } from './checker-types.js';
import { type History, type Invocation, occKey, type StoredRun } from './history.js';
import { EPOCH } from './sim-store.js';

export type { CheckedBackfill, CheckedJob, Violation, ViolationKind } from './checker-types.js';

/**
 * The guarantees, judged on the history of one simulation.
 *
 * Per occurrence, invocations ordered by start:
 * - `overlap`: a run starts with a different token while an earlier run of the same occurrence is
 *   still going and has not been told to stop (its signal not aborted) — fencing plus invariant 4
 *   (a run whose lease could not be kept is aborted before the lease ends) forbid this.
 * - `rerun-after-success`: a run starts after the store applied another run's `succeeded` history
 *   record, unless that run's finish found its lease gone (release refused) and the new run is a
 *   later attempt: the documented at-least-once recovery, when the lease lapsed before the outcome
 *   was stored. A fresh run (the same attempt) after such a success is still a rerun.
 * - `gate-overlap`: two runs of one overlap gate side by side (checker-gates.ts).
 * - `token-order`: tokens never go down; an equal token is only a retry (same node incarnation,
 *   attempt + 1, after the previous attempt failed).
 * - `attempt-order`: a run with a higher token (a recovery) has a higher attempt number.
 * - `unjustified-skip`: a fire time recorded skipped for `overlap` while no run of its overlap gate
 *   (job, stored schedule, shard) was going: no in-flight record of the gate, applied by the store
 *   before the skip, that started at or before the fire time and was not yet deleted at it (a
 *   claim that had not started held the gate); or recorded skipped with no reason. A page's run
 *   counts as a run of its stored schedule's gate from its page's start record (`ctl|page|…`,
 *   `started`) until its outcome under the page's token, or the record's delete, is applied. And
 *   the run a skip names (fire time and token) must have had its handler called, by the fire time
 *   plus NAMED_RUN_SLACK_MS: a start on record whose node lost the answer calls nothing. An
 *   `excluded` skip needs its trigger's exclude list to match (`CheckedJob.excluded`); a `paused`
 *   skip (one entry per pause: fire times `fireTime` to its span's last) needs a pause of its job
 *   or schedule covering its first and its last fire time (`CheckedJob.paused`: the public
 *   checker's rule, history-skips.ts). A `removed` skip needs the version of its stored schedule
 *   that held the fire time to have been removed or replaced after it (`CheckedJob.removedAfter`).
 * - `unexpected-fire-time`: a run of a stored schedule at a fire time that none of its versions
 *   has while it is in the store (see `CheckedSchedule.allowed`), or a backfill run at a fire
 *   time no backfill call covers.
 * - `backfill-rerun`, `setup-failed`: see checker-backfills.ts; a pause, resume or backfill call
 *   of the options that failed (controls.ts). `ran-and-skipped`: checker-misfires.ts.
 * The same judgements hold for a stored schedule's occurrences (`job/id@fire time`) whether they are
 * claimed one by one or in pages; a success stored under a page's token after that page's lease
 * had lapsed (the store's view) excuses a recovery, as a refused release does for a run's own lease.
 * Per job, and per stored schedule, only when `checkLiveness` (a node stayed healthy all along; faults stopped before the
 * settle period):
 * - `lost-fire-time`: a fire time in the window is handled by nobody: no run, no overlap
 *   `skipped` event or `skipped` history record applied by the store (its node may have crashed
 *   before it heard back), and no misfire `skipped` span (of the job, or of the stored schedule)
 *   covering it, or moved on as missed-and-skipped (`settle`) by a page claim the store applied
 *   (its claimant may have died, or lost the reply, before it reported the span), and no `paused`
 *   span on record covering it (of its stream and shard). A fire time in a pause not resumed by
 *   the end of the window is not required (`CheckedJob.pausedToEnd`: its span is written only
 *   after the resume). A stored schedule's fire times are those of `CheckedSchedule.required`.
 *   (A misfire `run` announcement does not count: the replay itself must start. Run-once
 *   skipping older missed fire times in favour of the latest is a `skipped` span: not "lost".)
 * - `unfinished`: (jobs with `mustFinish`) an occurrence that started (by `finishBy`) but was never
 *   recorded as succeeded by the end — unless its stored schedule was removed or changed after its
 *   fire time and within a recovery's reach of its first start (`CheckedJob.removedAfter`,
 *   `recoverWithinMs`): a dead run of a schedule that is gone is recorded `abandoned` and not run
 *   again (recover/page-recovery.ts).
 * - the same two for each fire time a judged backfill call covers (checker-backfills.ts): it has
 *   run by the end, whether it had run before the call or the backfill ran it.
 */
export function check(history: History, jobs: CheckedJob[], checkLiveness: boolean): Violation[] {
  const violations: Violation[] = [];
  const byOcc = new Map<string, Invocation[]>();
  for (const inv of history.invocations) {
    const list = byOcc.get(inv.occ) ?? [];
    list.push(inv);
    byOcc.set(inv.occ, list);
  }
  // Successes as the store applied them (a node may die before it hears back).
  const succeeded = history.stored;
  const skipped = new Set<string>(history.storedSkipped);
  // Misfire spans by stream: the job's own trigger (`job`), or one stored schedule (`job/id`).
  const misfireSpans = new Map<string, [number, number][]>();
  for (const o of history.outcomes) {
    if (o.kind === 'skipped') {
      skipped.add(o.occ);
    } else if (o.kind === 'misfired' && o.action === 'skipped') {
      const stream = streamOf(o.job, o.scheduleId);
      const spans = misfireSpans.get(stream) ?? [];
      spans.push([o.firstFireTime ?? o.fireTime, o.fireTime]);
      misfireSpans.set(stream, spans);
    }
  }
  for (const o of history.settled) {
    const stream = streamOf(o.job, o.scheduleId);
    const spans = misfireSpans.get(stream) ?? [];
    spans.push([o.from, o.to]);
    misfireSpans.set(stream, spans);
  }
  // A `paused` skip on record stands for every fire time of its span (of its stream and shard), as
  // does a `removed` one with a span (the fire times a claim that never started held back).
  const pausedSpans = new Map<string, [number, number][]>();
  for (const s of history.skips) {
    if (s.reason !== 'paused' && !(s.reason === 'removed' && s.spanLast !== undefined)) continue;
    const key = `${streamOf(s.job, s.scheduleId)}#${s.shard ?? ''}`;
    pausedSpans.set(key, [...(pausedSpans.get(key) ?? []), [s.fireTime, s.spanLast ?? s.fireTime]]);
  }
  for (const failure of history.setupFailures)
    violations.push({ kind: 'setup-failed', occ: '(setup)', message: failure });
  const at = (ms: number) => `${(ms / 1000).toFixed(3)}s`;
  for (const [occ, runs] of byOcc) {
    runs.sort((a, b) => a.startedAt - b.startedAt);
    for (let j = 0; j < runs.length; j++) {
      const b = runs[j]!;
      for (let i = 0; i < j; i++) {
        const a = runs[i]!;
        const stillOn = Math.min(a.endedAt ?? Infinity, a.abortedAt ?? Infinity) > b.startedAt;
        if (a.token !== b.token && stillOn) {
          violations.push({
            kind: 'overlap',
            occ,
            message: `${b.node} started token ${b.token} at ${at(b.startedAt)} while ${a.node}'s run with token ${a.token} (started ${at(a.startedAt)}) was still running, not aborted`,
          });
        }
      }
      const prev = runs[j - 1];
      if (prev) {
        if (b.token < prev.token) {
          violations.push({
            kind: 'token-order',
            occ,
            message: `${b.node} ran with token ${b.token} after ${prev.node} ran with the higher token ${prev.token}`,
          });
        } else if (b.token === prev.token) {
          const retry = b.node === prev.node && b.attempt === prev.attempt + 1 && prev.ended === 'error';
          if (!retry)
            violations.push({
              kind: 'token-order',
              occ,
              message: `token ${b.token} ran twice (${prev.node} attempt ${prev.attempt}, then ${b.node} attempt ${b.attempt}) and it is not a retry after a failure`,
            });
        } else if (b.attempt <= prev.attempt) {
          violations.push({
            kind: 'attempt-order',
            occ,
            message: `${b.node} ran attempt ${b.attempt} (token ${b.token}) after ${prev.node} ran attempt ${prev.attempt} (token ${prev.token})`,
          });
        }
      }
      for (const s of succeeded.get(occ) ?? []) {
        if (s.at >= b.startedAt || s.token === b.token) continue;
        // A success stored after its lease lapsed excuses a recovery of it (a later attempt),
        // never a fresh run of the fire time as attempt 1 again.
        const ranAttempt = runs.find((x) => x.token === s.token)?.attempt ?? 1;
        if ((s.lapsed === true || history.lapsed.has(s.token)) && b.attempt > ranAttempt) continue;
        violations.push({
          kind: 'rerun-after-success',
          occ,
          message: `${b.node} started token ${b.token} at ${at(b.startedAt)} after the run with token ${s.token} was stored as succeeded at ${at(s.at)}`,
        });
      }
    }
  }
  checkGates(history.invocations, jobs, violations);
  checkStarts(history.invocations, jobs, violations);
  checkSkips(history, jobs, violations);
  checkFireTimes(history, jobs, violations);
  checkMaxRuns(history, jobs, violations);
  checkBackfillRuns(history, jobs, byOcc, violations);
  checkMisfireSkips(history, jobs, violations);
  if (!checkLiveness) return violations;
  const streams = jobs.flatMap((job) => [
    { job, scheduleId: undefined as string | undefined, fireTimes: job.fireTimes },
    ...(job.schedules ?? []).map((s) => ({ job, scheduleId: s.id, fireTimes: s.required })),
  ]);
  for (const { job, scheduleId, fireTimes } of streams) {
    const stream = streamOf(job.name, scheduleId);
    const spans = misfireSpans.get(stream) ?? [];
    for (const fireTime of fireTimes) {
      for (const shard of job.shards) {
        const occ = occKey(job.name, fireTime, shard, scheduleId);
        const ran = byOcc.has(occ);
        const inSpan = ([a, b]: [number, number]) => fireTime >= a && fireTime <= b;
        const handled =
          ran ||
          skipped.has(occ) ||
          spans.some(inSpan) ||
          (pausedSpans.get(`${stream}#${shard ?? ''}`) ?? []).some(inSpan);
        if (!handled) {
          // In a pause not resumed by the end of the window: its span is not on record yet.
          if (job.pausedToEnd?.(scheduleId, fireTime)) continue;
          // Its start was on record (a page's start write) and its node died before running it;
          // the node that took the page over found its schedule removed or changed, recorded the
          // dead attempt abandoned and ran it no more (recover/page-recovery.ts) — the excuse of
          // `unfinished` below, its start taken at most a recovery's reach after the fire time
          // (simulator: three jobs, the fault mix, seed 283: the start write's reply lost, the
          // node crashed 0.8 s later, the schedule removed 0.1 s before the takeover).
          if (
            history.abandoned.has(`${occ}|1`) &&
            removedMidRun(job, scheduleId, fireTime, fireTime - EPOCH + (job.recoverWithinMs ?? 0))
          )
            continue;
          violations.push({
            kind: 'lost-fire-time',
            occ,
            message:
              'no node ran it, skipped it on record (overlap, excluded, a paused span), or reported it as a skipped misfire',
          });
        } else if (ran && job.mustFinish && !succeeded.has(occ)) {
          const first = Math.min(...byOcc.get(occ)!.map((r) => r.startedAt));
          if (
            first > (job.finishBy ?? Number.POSITIVE_INFINITY) ||
            removedMidRun(job, scheduleId, fireTime, first)
          )
            continue;
          violations.push({
            kind: 'unfinished',
            occ,
            message:
              'it started but was never stored as succeeded (recover is on and the handler never fails)',
          });
        }
      }
    }
  }
  checkBackfillLiveness(history, jobs, byOcc, violations);
  return violations;
}

/**
 * A stored schedule with `maxRuns` (docs/bounds.md) starts at most that many of its fire times,
 * fleet-wide: distinct fire times run (a retry or recovery is the same occurrence again; a
 * backfill is not counted by the schedule).
 */
function checkMaxRuns(history: History, jobs: readonly CheckedJob[], violations: Violation[]): void {
  const limits = new Map<string, number>();
  for (const job of jobs)
    for (const s of job.schedules ?? [])
      if (s.maxRuns !== undefined) limits.set(streamOf(job.name, s.id), s.maxRuns);
  if (limits.size === 0) return;
  const started = new Map<string, Set<number>>();
  for (const inv of history.invocations) {
    if (inv.scheduleId === undefined || inv.source === 'backfill') continue;
    const stream = streamOf(inv.job, inv.scheduleId);
    if (!limits.has(stream)) continue;
    const times = started.get(stream) ?? new Set<number>();
    times.add(inv.fireTime);
    started.set(stream, times);
  }
  for (const [stream, times] of started) {
    const max = limits.get(stream)!;
    if (times.size > max)
      violations.push({
        kind: 'too-many-runs',
        occ: stream,
        message: `${times.size} of its fire times started, but maxRuns is ${max}`,
      });
  }
}

/** Every run of a stored schedule is at one of its fire times (manual triggers aside). */
function checkFireTimes(history: History, jobs: readonly CheckedJob[], violations: Violation[]): void {
  const allowed = new Map<string, Set<number>>();
  for (const job of jobs)
    for (const s of job.schedules ?? []) allowed.set(streamOf(job.name, s.id), s.allowed);
  const flagged = new Set<string>();
  for (const inv of history.invocations) {
    if (inv.scheduleId === undefined || flagged.has(inv.occ)) continue;
    const times = allowed.get(streamOf(inv.job, inv.scheduleId));
    if (!times || times.has(inv.fireTime)) continue;
    flagged.add(inv.occ);
    violations.push({
      kind: 'unexpected-fire-time',
      occ: inv.occ,
      message: `${inv.node} ran it (token ${inv.token}, attempt ${inv.attempt}, source ${inv.source}), but schedule ${inv.scheduleId} does not fire then while it is in the store`,
    });
  }
}

/**
 * How long after a fire time the run an overlap skip names may have had its handler called. The
 * judge counts a run only as its holder's mark says (run/invoked-mark.ts): called at or before
 * the fire time by the holder's estimate of the store's time, which runs late, never early, but
 * for the holder's clock drift since its claim (2 % at most here). Every sweep passes at 0; 1 s
 * before the mark was checked (2026-12-06).
 */
const NAMED_RUN_SLACK_MS = 100;

/** Every stored overlap skip is borne out by a run of its gate going at its fire time (see `check`). */
function checkSkips(history: History, jobs: readonly CheckedJob[], violations: Violation[]): void {
  const jobOf = new Map(jobs.map((j) => [j.name, j]));
  const at = (ms: number) => `+${((ms - EPOCH) / 1000).toFixed(3)}s`;
  const byGate = new Map<string, StoredRun[]>();
  for (const r of history.inflight) {
    const gate = gateOf(r);
    const list = byGate.get(gate);
    if (list) list.push(r);
    else byGate.set(gate, [r]);
  }
  const replacedByRun = supersededJudge(history, jobs);
  // When each run's handler was first called (virtual ms), by gate, fire time and token.
  const invokedBy = new Map<string, number>();
  for (const inv of history.invocations) {
    const k = `${gateOf(inv)}|${inv.fireTime}|${inv.token}`;
    invokedBy.set(k, Math.min(invokedBy.get(k) ?? inv.startedAt, inv.startedAt));
  }
  for (const skip of history.skips) {
    if (skip.reason === 'superseded') {
      if (!replacedByRun(skip))
        violations.push({
          kind: 'unjustified-skip',
          occ: skip.occ,
          message: `recorded skipped as superseded${skip.byFireTime === undefined ? '' : ` by ${at(skip.byFireTime)}`}, but that fire time neither ran nor was skipped for overlap (nor was one that superseded it in turn)`,
        });
      continue;
    }
    if (skip.reason === 'excluded') {
      if (jobOf.get(skip.job)?.excluded?.(skip.scheduleId, skip.fireTime) !== true)
        violations.push({
          kind: 'unjustified-skip',
          occ: skip.occ,
          message:
            "recorded skipped as excluded, but the fire time matches no entry of its trigger's exclude list",
        });
      continue;
    }
    if (skip.reason === 'paused') {
      // One entry per pause: fire times `fireTime`..`spanLast`, each borne out by a pause.
      const paused = jobOf.get(skip.job)?.paused;
      const last = skip.spanLast ?? skip.fireTime;
      if (paused?.(skip.scheduleId, skip.fireTime) !== true || !paused(skip.scheduleId, last))
        violations.push({
          kind: 'unjustified-skip',
          occ: skip.occ,
          message: `recorded skipped as paused (fire times ${at(skip.fireTime)} to ${at(last)}), but no pause of its job or schedule covers them`,
        });
      continue;
    }
    if (skip.reason === 'removed') {
      // A span: its last fire time too (the version that held them all was removed after it).
      const removedAfter = jobOf.get(skip.job)?.removedAfter;
      const last = skip.spanLast ?? skip.fireTime;
      if (removedAfter?.(skip.scheduleId, skip.fireTime) !== true || !removedAfter(skip.scheduleId, last))
        violations.push({
          kind: 'unjustified-skip',
          occ: skip.occ,
          message: `recorded skipped as removed (fire times ${at(skip.fireTime)} to ${at(last)}), but schedule ${skip.scheduleId ?? '(none)'} was neither removed nor changed after them`,
        });
      continue;
    }
    if (skip.reason !== 'overlap') {
      violations.push({
        kind: 'unjustified-skip',
        occ: skip.occ,
        message: `recorded skipped with reason ${skip.reason}`,
      });
      continue;
    }
    const gate = gateOf(skip);
    // Virtual ms of the fire time (store ms = EPOCH + virtual ms).
    const F = skip.fireTime - EPOCH;
    const going = (byGate.get(gate) ?? []).some(
      (r) =>
        r.putAt <= skip.at && r.startedAt <= skip.fireTime && (r.deletedAt === undefined || r.deletedAt >= F),
    );
    if (!going) {
      violations.push({
        kind: 'unjustified-skip',
        occ: skip.occ,
        message: `recorded skipped for overlap${skip.byFireTime === undefined ? '' : ` with the run of ${at(skip.byFireTime)}`}, but no run of its gate had started by ${at(skip.fireTime)} and was still going then`,
      });
      continue;
    }
    // The run it names must have run: its handler called (a store record of a start is a claim's
    // promise, not a run — a page whose start write was applied but whose node never heard back
    // runs nothing), by the fire time.
    if (skip.byToken === undefined || skip.byFireTime === undefined) continue;
    const named = invokedBy.get(`${gate}|${skip.byFireTime}|${skip.byToken}`);
    if (named === undefined || named > F + NAMED_RUN_SLACK_MS)
      violations.push({
        kind: 'unjustified-skip',
        occ: skip.occ,
        message: `recorded skipped for overlap with the run of ${at(skip.byFireTime)} (token ${skip.byToken}), but that run ${named === undefined ? 'never started' : `started only at +${(named / 1000).toFixed(3)}s`}`,
      });
  }
}

/**
 * A run of a stored schedule that was removed or changed after its fire time and within a
 * recovery's reach of the run's first start (`first`, virtual ms): its dead run is recorded
 * abandoned and not run again (recover/page-recovery.ts), so it need not finish.
 */
function removedMidRun(
  job: CheckedJob,
  scheduleId: string | undefined,
  fireTime: number,
  first: number,
): boolean {
  if (scheduleId === undefined || job.removedAfter === undefined) return false;
  // Starts are virtual ms, fire times and `by` store ms (EPOCH + virtual ms).
  return job.removedAfter(scheduleId, fireTime, EPOCH + first + (job.recoverWithinMs ?? 0));
}
