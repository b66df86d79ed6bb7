import { type CheckedJob, streamOf, type Violation } from './checker-types.js';
import type { Invocation } from './history.js';
import { EPOCH } from './sim-store.js';

/** Sources whose run is of a fire time of the trigger, and so starts at that fire time's offset. */
const AT_OFFSET = new Set(['schedule', 'misfire', 'recover']);

/**
 * `wrong-start`: a run of a jittered trigger's fire time (a job's own, or a stored schedule's of
 * one version: `CheckedSchedule.startOf`) — on time, a misfire replay or a recovery, one by one or
 * in a page, by whichever node and path — is told `ctx.scheduledAt` = its fire time plus the offset
 * every node computes from (job, schedule, fire time) (`CheckedJob.startOf`), and does not start
 * before it on the store clock (docs/jitter.md). A recovery that forgot the offset would report
 * the nominal fire time, and lateness counted from it would be wrong by the offset. A backfill run
 * is told its fire time (docs/backfill.md), and so may be the recovery of a fire time some
 * backfill call covers.
 */
export function checkStarts(
  invocations: readonly Invocation[],
  jobs: readonly CheckedJob[],
  violations: Violation[],
): void {
  const startOf = new Map<string, (fireTime: number) => number>();
  for (const j of jobs) {
    if (j.startOf) startOf.set(streamOf(j.name, undefined), j.startOf);
    for (const s of j.schedules ?? []) if (s.startOf) startOf.set(streamOf(j.name, s.id), s.startOf);
  }
  // A backfill run is told its fire time (docs/backfill.md), and so is the recovery of one.
  const backfilled = new Set<string>();
  for (const j of jobs)
    for (const b of j.backfills ?? [])
      for (const f of b.fireTimes) backfilled.add(`${streamOf(j.name, b.scheduleId)}@${f}`);
  for (const inv of invocations) {
    const stream = streamOf(inv.job, inv.scheduleId);
    const of = startOf.get(stream);
    if (!of || inv.scheduledAt === undefined) continue;
    if (!AT_OFFSET.has(inv.source)) continue;
    const want = of(inv.fireTime);
    const asBackfill = inv.source === 'recover' && backfilled.has(`${stream}@${inv.fireTime}`);
    if (inv.scheduledAt !== want && !(asBackfill && inv.scheduledAt === inv.fireTime))
      violations.push({
        kind: 'wrong-start',
        occ: inv.occ,
        message: `${inv.node} ran it (${inv.source}, token ${inv.token}) told scheduledAt +${inv.scheduledAt - EPOCH} ms; its offset puts it at +${want - EPOCH} ms`,
      });
    else if (EPOCH + inv.startedAt < inv.scheduledAt)
      violations.push({
        kind: 'wrong-start',
        occ: inv.occ,
        message: `${inv.node} started it (${inv.source}, token ${inv.token}) at +${inv.startedAt} ms, before its scheduledAt +${inv.scheduledAt - EPOCH} ms`,
      });
  }
}
