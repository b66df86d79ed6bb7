/** The checker's "no fire time lost, no skip without its reason" part (see history-check.ts). */

import { compileExclude, isExcluded } from '../schedule/exclude.js';
import { gateOf } from '../scheduler/keys.js';
import type { CheckInput, CheckResult, ExpectedOccurrence, RunRecord, SkipRecord } from './history-model.js';
import { occurrenceKey, skipCovers } from './history-model.js';

/**
 * Every expected occurrence (in a healthy window) has a start or a recorded skip, and a skip that
 * the history bears out (see the file comment).
 */
export function checkLost(
  input: CheckInput,
  byOccurrence: Map<string, { starts: RunRecord[]; finishes: RunRecord[] }>,
  tolerance: number,
  result: CheckResult,
): void {
  const healthy = input.healthy;
  const skips = input.skips ?? [];
  const facts = new Map(input.jobs.map((j) => [j.job, j]));
  // The runs of each gate: every start, with its finish (same token and attempt), if any.
  const byGate = new Map<string, { start: RunRecord; end: RunRecord | undefined }[]>();
  for (const { starts, finishes } of byOccurrence.values())
    for (const start of starts) {
      const end = finishes.find((f) => f.token === start.token && f.attempt === start.attempt);
      const gate = gateOf(start);
      const runs = byGate.get(gate) ?? [];
      runs.push({ start, end });
      byGate.set(gate, runs);
    }
  // Superseded skips by gate and fire time: a chain of them is followed to the run that ended it;
  // overlap skips and expected fire times, by gate and fire time (see replacedByRun).
  const chain: Chain = { superseded: new Map(), overlapped: new Set(), lastExpected: new Map() };
  for (const sk of skips) {
    if (sk.from !== sk.to) continue;
    if (sk.reason === 'superseded') chain.superseded.set(`${gateOf(sk)}|${sk.from}`, sk);
    else if (sk.reason === 'overlap') chain.overlapped.add(`${gateOf(sk)}|${sk.from}`);
  }
  for (const e of input.expected ?? []) {
    const gate = gateOf(e);
    chain.lastExpected.set(gate, Math.max(chain.lastExpected.get(gate) ?? e.fireTime, e.fireTime));
  }
  const excludedBy = exclusionsOf(input);
  const pausedAt = pausesOf(input, tolerance);
  const pausedWhenDue = (e: ExpectedOccurrence) => pausedAround(input, e, tolerance, tolerance);
  const inHealthy = (from: number, to: number) =>
    healthy === undefined || healthy.some((w) => w.from <= from && to <= w.to);
  const justified = (skip: SkipRecord, e: ExpectedOccurrence): boolean => {
    const F = e.fireTime;
    const job = facts.get(e.job);
    const runs = byGate.get(gateOf(e)) ?? [];
    // A misfire: no node was healthy for the fire time's whole threshold, or it fell due while its
    // job or schedule was paused — after the resume (seen by the nodes within a poll, the due
    // entry read after) less than the threshold is left to claim it, and a loaded node misses it.
    if (skip.reason === 'misfire')
      return !inHealthy(F, F + (job?.misfireThresholdMs ?? 1000)) || pausedWhenDue(e);
    if (skip.reason === 'superseded') return replacedByRun(skip, F, runs, chain);
    if (skip.reason === 'excluded') return excludedBy(e);
    if (skip.reason === 'paused') return pausedAt(e, job?.misfireThresholdMs ?? 1000);
    if (skip.reason === 'removed')
      return (input.removals ?? []).some(
        (r) => r.job === e.job && r.scheduleId === e.scheduleId && r.at >= F - tolerance,
      );
    const hold = job?.lockAtLeastForMs ?? 0;
    return runs.some(
      ({ start, end }) =>
        (skip.by === undefined ||
          (start.fireTime === skip.by.fireTime &&
            (skip.by.token === undefined || start.token === skip.by.token))) &&
        start.at <= F + tolerance &&
        (end === undefined || end.at >= F - tolerance || start.at + hold >= F - tolerance),
    );
  };
  for (const e of input.expected ?? []) {
    if ((byOccurrence.get(occurrenceKey(e))?.starts.length ?? 0) > 0) continue;
    const covering = skips.filter((s) => skipCovers(s, e));
    if (covering.some((s) => justified(s, e))) {
      result.skipped += 1;
      continue;
    }
    if (covering.length > 0) {
      result.unjustifiedSkips += 1;
      result.violations.push({
        kind: 'unjustified-skip',
        occurrence: occurrenceKey(e),
        message: `${occurrenceKey(e)}: never started; recorded skipped (${covering.map(describeSkip).join('; ')}), which the history does not bear out: ${covering.map((s) => whyUnjustified(s)).join('; ')}`,
      });
      continue;
    }
    if (!inHealthy(e.fireTime, e.fireTime)) continue;
    result.misses += 1;
    result.violations.push({
      kind: 'lost-fire-time',
      occurrence: occurrenceKey(e),
      message: `${occurrenceKey(e)}: fell due while a node was healthy, yet never started and no skip was recorded`,
    });
  }
}

/**
 * A `superseded` skip is borne out by the later queued fire time that replaced it (`by`) having
 * started — or, itself superseded by a later one before it ran, by where that chain ends: a run,
 * or a fire time skipped for overlap (coalesced into a fire time a going run overlapped; that
 * skip is judged on its own). A chain that ends in a fire time that never started and is not on
 * record bears out nothing: the fire time was recorded skipped while nothing took its place.
 * Without `by`, any later fire time of the gate that started.
 */
interface Chain {
  superseded: Map<string, SkipRecord>;
  overlapped: Set<string>;
  /** The last expected fire time of each gate: the end of the window judged. */
  lastExpected: Map<string, number>;
}

function replacedByRun(
  skip: SkipRecord,
  F: number,
  runs: readonly { start: RunRecord }[],
  chain: Chain,
): boolean {
  if (skip.by === undefined) return runs.some((r) => r.start.fireTime > F);
  const gate = gateOf(skip);
  // Each link names a later fire time (so the walk ends). One after the last expected fire time
  // of the gate is not judged, as a lost one there is not: it may still be queued when the
  // history was read.
  const end = chain.lastExpected.get(gate) ?? Number.POSITIVE_INFINITY;
  for (let t = skip.by.fireTime, after = F; t > after; ) {
    const at = `${gate}|${t}`;
    const fire = t;
    if (t > end || runs.some((r) => r.start.fireTime === fire) || chain.overlapped.has(at)) return true;
    const next = chain.superseded.get(at)?.by?.fireTime;
    if (next === undefined) return false;
    after = t;
    t = next;
  }
  return false;
}

function describeSkip(s: SkipRecord): string {
  if (s.by === undefined) return s.reason;
  const who = [s.by.node && `on ${s.by.node}`, s.by.token !== undefined && `token ${s.by.token}`].filter(
    Boolean,
  );
  return `${s.reason} by the run of ${new Date(s.by.fireTime).toISOString()}${who.length > 0 ? ` (${who.join(', ')})` : ''}`;
}

function whyUnjustified(s: SkipRecord): string {
  if (s.reason === 'misfire')
    return 'a node was healthy from the fire time to its misfire threshold, so it could be claimed in time';
  if (s.reason === 'superseded')
    return s.by === undefined
      ? 'no later fire time of its overlap gate started'
      : 'the queued fire time that replaced it neither started nor was skipped for overlap (nor was the one that replaced that one, and so on)';
  if (s.reason === 'excluded')
    return "the fire time matches no entry of its trigger's exclude list (input.exclusions)";
  if (s.reason === 'paused') return 'no pause of its job or schedule (input.pauses) covers the fire time';
  if (s.reason === 'removed')
    return 'its stored schedule was not removed or changed after the fire time (input.removals)';
  return s.by === undefined
    ? 'no run of its overlap gate had started by the fire time and was still going then'
    : 'that run had not started by the fire time, or had finished before it';
}

/**
 * Whether an expected occurrence's fire time is excluded by its trigger's list (input.exclusions),
 * a calendar counting every date any of its given versions held.
 */
function exclusionsOf(input: CheckInput): (e: ExpectedOccurrence) => boolean {
  const calendars = new Map<string, { dates: Set<string>; timezone?: string | undefined }>();
  for (const c of input.calendars ?? []) {
    const held = calendars.get(c.id) ?? { dates: new Set<string>(), timezone: c.timezone };
    for (const d of c.dates) held.dates.add(d);
    calendars.set(c.id, held);
  }
  const lists = new Map(
    (input.exclusions ?? []).map((x) => [
      `${x.job}\u0000${x.scheduleId ?? ''}`,
      compileExclude(x.exclude, x.timezone, `exclusions of ${x.job}`),
    ]),
  );
  return (e) => {
    const list = lists.get(`${e.job}\u0000${e.scheduleId ?? ''}`);
    return list !== undefined && isExcluded(list, e.fireTime, (id) => calendars.get(id));
  };
}

/** Slack after a resume for a `paused` span: it runs to the first read of the trigger after the resume. */
const PAUSE_SLACK_MS = 15_000;

/**
 * Whether an expected occurrence's fire time fell in a pause of its job or of its stored schedule
 * (input.pauses), give or take its misfire threshold (a fire time just before the pause not claimed
 * yet) and, after the resume, PAUSE_SLACK_MS. The simulator's checker judges its `paused` skips
 * with it too (simulate/sim-pauses.ts).
 */
export function pausesOf(
  input: Pick<CheckInput, 'pauses'>,
  tolerance: number,
): (e: ExpectedOccurrence, thresholdMs: number) => boolean {
  return (e, thresholdMs) => pausedAround(input, e, thresholdMs + tolerance, thresholdMs + PAUSE_SLACK_MS);
}

/**
 * Whether a pause of the occurrence's job or of its stored schedule (input.pauses) covers its fire
 * time, from `before` ms before the pause began to `after` ms after it ended.
 */
function pausedAround(
  input: Pick<CheckInput, 'pauses'>,
  e: ExpectedOccurrence,
  before: number,
  after: number,
): boolean {
  return (input.pauses ?? []).some(
    (p) =>
      p.job === e.job &&
      (p.scheduleId === undefined || p.scheduleId === e.scheduleId) &&
      p.from - before <= e.fireTime &&
      (p.to === undefined || e.fireTime <= p.to + after),
  );
}
