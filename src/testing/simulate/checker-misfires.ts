import { type CheckedJob, streamOf, type Violation } from './checker-types.js';
import type { History } from './history.js';
import { EPOCH } from './sim-store.js';

/** Sources whose run is of a trigger's own fire time (a backfill may run a skipped one again; a manual trigger has its own). */
const OF_TRIGGER = new Set(['schedule', 'misfire', 'recover', 'retry']);

/**
 * `ran-and-skipped`: a fire time some node said it skipped as missed — a `misfired` event with
 * action `skipped` (its span, of the job's trigger or of one stored schedule), or a page claim
 * the store applied that moved a stored schedule past it as missed (`History.settled`) — and that
 * also ran (on time, as a replay or a recovery; a backfill runs skipped fire times on purpose, so
 * a fire time some backfill call covers is not judged: its run may be that backfill's recovery).
 * What a user reads then contradicts itself: the log says the 10:00 report was not sent, and it
 * was. "Missed" must mean nobody claimed it, on the store's order of events, not on one node's
 * view of it.
 */
export function checkMisfireSkips(
  history: History,
  jobs: readonly CheckedJob[],
  violations: Violation[],
): void {
  const backfilled = new Set<string>();
  for (const j of jobs)
    for (const b of j.backfills ?? [])
      for (const f of b.fireTimes) backfilled.add(`${streamOf(j.name, b.scheduleId)}@${f}`);
  const spans = new Map<string, { first: number; last: number; by: string }[]>();
  const add = (stream: string, first: number, last: number, by: string) => {
    const list = spans.get(stream);
    if (list) list.push({ first, last, by });
    else spans.set(stream, [{ first, last, by }]);
  };
  for (const o of history.outcomes)
    if (o.kind === 'misfired' && o.action === 'skipped')
      add(
        streamOf(o.job, o.scheduleId),
        o.firstFireTime ?? o.fireTime,
        o.fireTime,
        `${o.node}'s misfired event`,
      );
  for (const s of history.settled) add(streamOf(s.job, s.scheduleId), s.from, s.to, 'a page claim (settled)');
  if (spans.size === 0) return;
  const label = (ms: number) => `+${((ms - EPOCH) / 1000).toFixed(3)}s`;
  // Which shards of a fire time ran: a sharded fire time skipped while some of its shards ran
  // lost the others (their message says which ran).
  const ran = new Map<string, Set<number | undefined>>();
  for (const inv of history.invocations) {
    const at = `${streamOf(inv.job, inv.scheduleId)}@${inv.fireTime}`;
    const shards = ran.get(at);
    if (shards) shards.add(inv.shard);
    else ran.set(at, new Set([inv.shard]));
  }
  for (const inv of history.invocations) {
    if (!OF_TRIGGER.has(inv.source)) continue;
    const at = `${streamOf(inv.job, inv.scheduleId)}@${inv.fireTime}`;
    if (backfilled.has(at)) continue;
    const span = spans
      .get(streamOf(inv.job, inv.scheduleId))
      ?.find((s) => inv.fireTime >= s.first && inv.fireTime <= s.last);
    if (!span) continue;
    const shards = inv.shard === undefined ? '' : `; shards of it that ran: ${[...ran.get(at)!].join(', ')}`;
    violations.push({
      kind: 'ran-and-skipped',
      occ: inv.occ,
      message: `${inv.node} ran it (${inv.source}, token ${inv.token}), and ${span.by} skipped it as missed (${label(span.first)} to ${label(span.last)}${shards})`,
    });
  }
}
