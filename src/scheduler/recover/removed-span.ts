import { boundedBy } from '../../schedule/bounds.js';
import { fireSpan } from '../../schedule/fire-span.js';
import { compileShared } from '../../schedule/shared-triggers.js';
import type { CompiledTrigger, Trigger } from '../../schedule/trigger.js';
import type { WriteOp } from '../../store/types.js';
import type { PageItem } from '../claim/page-record.js';
import { spanSkipEntry } from '../control/pause-span.js';
import { occFields } from '../finish/history.js';
import { type OccurrenceId, parseDueEntry } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { queryAudit } from '../observe/audit-query.js';
import type { SchedulerEvents } from '../types.js';

/** Audit entries of the schedule looked at, newest first (its change is nearly always among the latest few). */
const AUDIT_LOOK = 20;

/**
 * The fire times a page that never started held back, of a stored schedule removed or changed
 * before the page was taken over: one `removed` skip (a span when more than one), or none.
 *
 * A page claimed fire time F of the schedule and moved its due entry to the next fire time F';
 * its node died (or lost the claim's answer) before the page's start. F' then waits for the
 * page's recovery (claim/prev-run.ts: never skipped behind a claim that did not start), and
 * every fire time after it too (the entry does not move while it waits). When the schedule is
 * removed or changed meanwhile, the takeover records F `removed` (page-recovery.ts) — and F'
 * onwards, due while that version was in the store, would have no record at all (simulator:
 * three jobs, the fault mix, 5 nodes, seeds 41 and 233: +20 s recorded removed, +23 s and +26 s
 * nothing). They are recorded here, up to the change: its time and the version it ended come
 * from the audit trail (the oldest removal, or upsert that changed it, after F). Without that
 * entry (expired, or a trigger that no longer compiles) nothing is written: only what is known
 * is put on record.
 */
export async function heldBackSkip(
  s: NodeState,
  job: string,
  item: PageItem,
  token: number,
  at: number,
): Promise<{ write: WriteOp; event: SchedulerEvents['skipped'] } | undefined> {
  if (!item.to.startsWith('due|')) return undefined;
  const first = parseDueEntry(item.to).fireTime;
  const entries = await queryAudit(s.store, { job, scheduleId: item.id, limit: AUDIT_LOOK });
  let change: (typeof entries)[number] | undefined;
  for (const e of entries) {
    const ended =
      e.action === 'schedules.remove' || (e.action === 'schedules.upsert' && e.before !== undefined);
    if (ended && e.at.getTime() > item.fireTime) change = e;
  }
  if (!change || typeof change.before !== 'object' || change.before === null) return undefined;
  const until = change.at.getTime();
  if (until <= first) return undefined;
  const before = change.before as Record<string, unknown>;
  const { id: _i, job: _j, data: _d, jitter: _t, exclude: _x, ...fields } = before;
  let trigger: CompiledTrigger;
  try {
    trigger = boundedBy(compileShared(fields as Trigger, 'a removed schedule'), before, 'a removed schedule');
  } catch {
    return undefined;
  }
  const span = fireSpan(trigger, first - 1, until, 1);
  if (!span) return undefined;
  const last = span.tail[0]!;
  const occ: OccurrenceId = { job, scheduleId: item.id, fireTime: span.first, shard: undefined };
  const spanned = span.count === 1 ? undefined : { last, count: span.count };
  const write = spanSkipEntry(s, occ, 'removed', spanned, token, at);
  const event: SchedulerEvents['skipped'] = { ...occFields(occ), reason: 'removed' };
  if (spanned)
    event.span = {
      first: new Date(span.first),
      last: new Date(last),
      ...(span.count !== undefined && { count: span.count }),
    };
  return { write, event };
}
