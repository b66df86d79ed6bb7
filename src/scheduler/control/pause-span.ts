import { fireSpan } from '../../schedule/fire-span.js';
import { nextFireTimes } from '../../schedule/fire-times.js';
import type { CompiledTrigger } from '../../schedule/trigger.js';
import type { WriteOp } from '../../store/types.js';
import { encodeHistory, occFields } from '../finish/history.js';
import type { PauseSpan } from '../internal-types.js';
import { keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';

/**
 * Paused fire times on record: ONE skipped history entry per pause (reason `paused`, with its
 * `span` { first, last, count }), not one per fire time.
 *
 * A resume — of a job (`scheduler.resume`) or of one stored schedule (`schedules.resume`) —
 * writes, in the same `apply` as the pause's deletion, a marker `ctl|pspan|<job>|<id>` = { since,
 * until } that lives PAUSE_SPAN_TTL_MS. Every poll reads it with the other `ctl|` records (no
 * extra read). The fire times the pause left unclaimed are then missed, and the misfire policy
 * handles them as one span, as it always did (due-entry.ts for stored schedules, misfire.ts for
 * the job's own trigger); where that span meets a marker, the fire times it does not replay from
 * the pause on are recorded as one `paused` entry (`pausedPart`: those missed before the pause
 * began stay a plain misfire).
 *
 * Exactly once, fleet-wide. For a stored schedule the entry is written by the winner of the claim
 * that settles the span (the claim of its first fire time: one winner, whose move of the due entry
 * is the claim) — with its settle writes (claim.ts) or with its page's started mark (page-claims.ts)
 * — under a key fixed by that fire time (`hist|<job>|<first>|<id>||0001`): a node that dies before
 * writing it leaves its claim to lapse (per-occurrence claims: the entry was not moved; another node
 * settles it again and writes the same key). A page that dies between its claim and its started mark
 * loses the entry (and its misfired event) with the page's other skips. For the job's own trigger
 * the span is settled without a claim (the high-water mark, misfire.ts): two nodes that handle it
 * at once both write the same key; the later write wins, one entry. A stored schedule's span
 * settle moves its due entry with `spanned` in its value: fire times settled from that entry
 * later (its replay not claimed within the threshold on a loaded fleet) are a plain misfire, never
 * a second span of the same pause (the job's own trigger relies on `pausedPart`'s window alone).
 * Two resumes of one pause (two nodes at once) write one marker key; a pause ended again within
 * the marker's life widens it.
 */

/** How long a pause's marker lives after its resume: the nodes settle its span within a poll or two. */
export const PAUSE_SPAN_TTL_MS = 10 * 60_000;

/**
 * Slack beyond the misfire threshold when matching a missed span to a pause: the span runs up to
 * when a node first read the due entry after the resume (a poll or a safety read of the due index).
 */
const MATCH_SLACK_MS = 15_000;

/**
 * The marker write that ends a pause begun at `since` (store time) at `until`, merged with the
 * marker `existing` (as read) of an earlier pause that ended lately: one span from the earlier start.
 */
export function endPause(
  job: string,
  scheduleId: string | undefined,
  since: number,
  until: number,
  existing: string | null,
): { op: WriteOp; key: string; span: PauseSpan } {
  let start = since;
  if (existing !== null) {
    try {
      const was = JSON.parse(existing) as Partial<PauseSpan>;
      if (typeof was.since === 'number') start = Math.min(start, was.since);
    } catch {
      // Not a marker this build wrote: replaced.
    }
  }
  const key = keys.pauseSpan(job, scheduleId);
  const span = { since: start, until };
  return { op: { op: 'put', key, value: JSON.stringify(span), ttlMs: PAUSE_SPAN_TTL_MS }, key, span };
}

/**
 * The part of missed fire times `first`..`last` (`count` of them, when known) of the job's trigger
 * or stored schedule that a pause of it (or of its job) that ended lately left: its first fire
 * time and how many there are, or `undefined` when there is none. Only fire times not yet missed
 * when the pause began are the pause's — from `since` less the misfire threshold on (a fire time
 * just before the pause that no node had claimed yet); those missed before (the fleet down, an
 * entry held back behind a page) are a plain misfire, said by the `misfired` event the caller
 * emits for the whole span — in a `paused` span, `checkHistory` would find them unjustified (no
 * pause covers them). The span must meet the pause, and start at the latest with its first fire
 * time after two polls and the misfire threshold (a node sees a pause within a poll, and may still
 * run a fire time it had claimed before). Only the first span the misfire policy settles after a
 * resume starts there: one that a loaded node settles later (a replay not claimed within the
 * threshold, with the fire times after it) starts at that replay, and is a plain misfire — so a
 * pause is on record once, unless it lasted less than that and a fire interval. Called only for
 * missed fire times: a node with no marker pays one `size` check.
 */
export function pausedPart(
  state: NodeState,
  of: { job: string; scheduleId: string | undefined; trigger: CompiledTrigger },
  span: { first: number; last: number; count: number | undefined },
  thresholdMs: number,
): { first: number; count: number | undefined } | undefined {
  const after = (t: number) => nextFireTimes(of.trigger, t, 1)[0];
  const from = pausedFrom(state, { ...of, after }, span.first, span.last, thresholdMs);
  if (from === undefined) return undefined;
  if (from === span.first) return { first: from, count: span.count };
  return { first: from, count: fireSpan(of.trigger, from - 1, span.last + 1, 1)?.count };
}

/** The first fire time of {@link pausedPart}, from the job's marker or the schedule's (the earlier). */
function pausedFrom(
  state: NodeState,
  of: { job: string; scheduleId: string | undefined; after: (t: number) => number | undefined },
  first: number,
  last: number,
  thresholdMs: number,
): number | undefined {
  if (state.pauseSpans.size === 0) return undefined;
  const { job, scheduleId, after } = of;
  const slack = thresholdMs + MATCH_SLACK_MS;
  const from = (span: PauseSpan | undefined): number | undefined => {
    if (span === undefined || first > span.until + slack) return undefined;
    if (first > (after(span.since + 2 * state.pollMs + thresholdMs) ?? Number.POSITIVE_INFINITY))
      return undefined;
    // The first fire time not yet missed when the pause began.
    const cut = Math.ceil(span.since - thresholdMs);
    const start = first >= cut ? first : after(cut - 1);
    return start !== undefined && start <= last ? start : undefined;
  };
  const a = from(state.pauseSpans.get(keys.pauseSpan(job, undefined)));
  const b =
    scheduleId === undefined ? undefined : from(state.pauseSpans.get(keys.pauseSpan(job, scheduleId)));
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

/**
 * The one `paused` history entry of fire times `first`..`last` (`count` of them, when known),
 * written at the history key of `occ` (its fire time is `first`), attempt 1.
 */
export function pausedSpanEntry(
  state: NodeState,
  occ: OccurrenceId,
  span: { last: number; count: number | undefined },
  token: number,
  at: number,
): WriteOp {
  return spanSkipEntry(state, occ, 'paused', span, token, at);
}

/**
 * One history entry that stands for fire times `first`..`last` (`count` of them, when known) not
 * run, for `reason` (`paused`, or `removed`: recover/removed-span.ts), at the history key of `occ`
 * (its fire time is `first`), attempt 1; `span` undefined: the one fire time of `occ` (no span).
 */
export function spanSkipEntry(
  state: NodeState,
  occ: OccurrenceId,
  reason: 'paused' | 'removed',
  span: { last: number; count: number | undefined } | undefined,
  token: number,
  at: number,
): WriteOp {
  const when = new Date(at);
  return {
    op: 'put',
    key: keys.history(occ, 1),
    value: encodeHistory({
      ...occFields(occ),
      node: state.node,
      attempt: 1,
      token,
      // Not `misfire`: that marks the runs the misfire policy replays, and this ran nothing.
      source: 'schedule',
      status: 'skipped',
      startedAt: when,
      finishedAt: when,
      reason,
      ...(span && {
        span: {
          first: new Date(occ.fireTime),
          last: new Date(span.last),
          ...(span.count !== undefined && { count: span.count }),
        },
      }),
    }),
    ttlMs: state.retentionMs,
  };
}
