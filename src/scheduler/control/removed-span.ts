import { boundedBy } from '../../schedule/bounds.js';
import { nextFireTimes } from '../../schedule/fire-times.js';
import { compileShared } from '../../schedule/shared-triggers.js';
import type { CompiledTrigger } from '../../schedule/trigger.js';
import type { WriteOp } from '../../store/types.js';
import { accountedFor } from '../claim/on-record.js';
import type { PageItem } from '../claim/page-record.js';
import { occFields } from '../finish/history.js';
import { keys, type OccurrenceId, parseDueEntry } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { queryAudit } from '../observe/audit-query.js';
import type { SchedulerEvents } from '../types.js';
import { spanSkipEntry } from './pause-span.js';

/** Audit entries of the schedule looked at, newest first (its change is nearly always among the latest few). */
const AUDIT_LOOK = 20;
/** Fire times one `removed` skip stands for at most (each is looked up before it is recorded). */
const MAX_SPAN = 64;

/** A `removed` skip: its history write and its `skipped` event. */
export interface RemovedSkip {
  write: WriteOp;
  event: SchedulerEvents['skipped'];
}

/**
 * The fire times of stored schedule `scheduleId` from `first` on that fell due while the version
 * holding them was in the store, and that nobody ran: one `removed` skip (a span when more than
 * one), or none.
 *
 * The change that ended the version comes from the audit trail: the oldest `schedules.remove`,
 * or `schedules.upsert` with a `before`, after `after` (store ms) — its time, and the schedule as
 * it was. Recorded are its fire times from `first` (which must be one of them: else the entry
 * was of another version) up to that time, at most {@link MAX_SPAN}, and only as far as none of
 * them is held by a claim or on record (a run claimed occurrence by occurrence moves its entry
 * only when it starts: such a run, or one of a newer version, is never also recorded skipped).
 * No audit entry (expired), a trigger that no longer compiles, or a fire time of the span held or
 * on record first: nothing is written — only what is known goes on record; `'held'` when the
 * first is held by a claim's lease (not a "done" hold) and not on record: ask again after it.
 */
export async function removedSkip(
  s: NodeState,
  job: string,
  scheduleId: string,
  first: number,
  after: number,
  token: number,
  at: number,
): Promise<RemovedSkip | 'held' | undefined> {
  const entries = await queryAudit(s.store, { job, scheduleId, limit: AUDIT_LOOK });
  let change: (typeof entries)[number] | undefined;
  for (const e of entries) {
    const ended =
      e.action === 'schedules.remove' || (e.action === 'schedules.upsert' && e.before !== undefined);
    if (ended && e.at.getTime() > after) change = e;
  }
  if (!change || typeof change.before !== 'object' || change.before === null) return undefined;
  const until = change.at.getTime();
  if (until <= first) return undefined;
  const before = change.before as Record<string, unknown>;
  let trigger: CompiledTrigger;
  try {
    trigger = boundedBy(compileShared(before, 'a removed schedule'), before, 'a removed schedule');
  } catch {
    return undefined;
  }
  const due = nextFireTimes(trigger, first - 1, MAX_SPAN).filter((f) => f < until);
  if (due[0] !== first) return undefined;
  const occs: OccurrenceId[] = due.map((fireTime) => ({ job, scheduleId, fireTime, shard: undefined }));
  const [recorded, held] = await Promise.all([
    accountedFor(s, occs),
    Promise.all(occs.map((o) => s.store.inspect(keys.occurrence(o)))),
  ]);
  let n = 0;
  while (n < occs.length && !recorded[n] && held[n] === null) n++;
  if (n === 0) {
    // The first one held by a claim's lease and not on record: its claimant may yet run, queue
    // or skip it — or die, and then nobody would (its entry deleted with the schedule: simulator
    // seed 20 of `jex,sb`, sb/b7@+11 s won by a node that crashed before queueing it, the
    // schedule removed 2 s later, inside that lease). `held`: looked at again once the lease
    // ends — a claim's lease, ending within lockAtMostFor of now (twice that: `at` is this node's
    // estimate of the store clock), not a "done" hold, which lasts an hour or more from a settle.
    const lease = held[0];
    const leaseMs = s.defined.get(job)?.spec.lockAtMostForMs;
    if (!recorded[0] && lease && leaseMs !== undefined && lease.expiresAt - at < 2 * leaseMs) return 'held';
    return undefined;
  }
  const last = due[n - 1]!;
  const occ = occs[0]!;
  const span = n === 1 ? undefined : { last, count: n };
  const event: SchedulerEvents['skipped'] = { ...occFields(occ), reason: 'removed' };
  if (span) event.span = { first: new Date(first), last: new Date(last), count: n };
  return { write: spanSkipEntry(s, occ, 'removed', span, token, at), event };
}

/**
 * The fire times a page that never started held back, its stored schedule removed or changed
 * before the page was taken over (recover/page-recovery.ts): the page claimed the item's fire
 * time F and moved its due entry to F'; F' then waited for the page's recovery (claim/prev-run.ts:
 * never skipped behind a claim that did not start), and every fire time after it too (the entry
 * does not move while it waits). The takeover records F `removed`; F' onwards, due while that
 * version was in the store, are recorded here (simulator: three jobs, the fault mix, 5 nodes,
 * seeds 41 and 233: +20 s recorded removed, +23 s and +26 s nothing).
 */
export function heldBackSkip(
  s: NodeState,
  job: string,
  item: PageItem,
  token: number,
  at: number,
): Promise<RemovedSkip | undefined> {
  if (!item.to.startsWith('due|')) return Promise.resolve(undefined);
  // `held`: the page's own recovery holds nothing there; another claim's fire time is its own.
  return removedSkip(s, job, item.id, parseDueEntry(item.to).fireTime, item.fireTime, token, at).then(
    (skip) => (skip === 'held' ? undefined : skip),
  );
}
