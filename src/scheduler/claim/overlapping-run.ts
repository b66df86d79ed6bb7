import { decodeHistory } from '../finish/history.js';
import type { Job } from '../internal-types.js';
import { esc, gateScope, keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { firstCalledBy, runMarkKey } from '../run/invoked-mark.js';
import { type InflightRecord, type RunningSince, sinceOf } from '../run/run-records.js';
import type { SkipCause } from '../types.js';

/** In-flight records of one gate read at most (a gate has one run going, a few around a recovery). */
const MAX_GATE_RUNS = 100;
/** History entries of the job read at most to find the run a lockAtLeastFor hold belongs to. */
const MAX_RECENT_HISTORY = 50;

/**
 * The run that makes skipping `occ` for overlap fair, if there is one: a run of the same overlap
 * gate that had *started* — its in-flight record written, and its holder's mark showing its
 * handler called (run/invoked-mark.ts: the record is written before the call, and a node that
 * lost the answer or froze calls nothing) — at or before `occ`'s fire time, and has not finished
 * (the record is still there, read now, after the fire time). With `lockAtLeastFor`, also a
 * finished run whose gate is still held by that hold: it started at or before the fire time and
 * less than lockAtLeastFor before it (the user's "no other run this soon"). `forSkip` false (a
 * fire time to queue, not to record skipped): the record alone is enough.
 *
 * `undefined`: the gate is held by a claim that has not started — a lost reply, a frozen node, a
 * start record still on its way, a start on record whose handler was not called by then (or not
 * marked yet) — or by a run that started after this fire time. Skipping then would lose a fire
 * time while no run was going (a node whose claim reply was dropped held the
 * gate for seconds; the healthy nodes skipped three fire times meanwhile). The caller queues it
 * behind the gate instead (never skipped for this): it runs once the holder ends or its lease lapses.
 *
 * Reads: one scan of the gate's in-flight records (two for a job's own trigger, whose gate manual
 * triggers share), one getMany of their holders' marks, plus one reverse scan of the job's
 * history when it has a lockAtLeastFor. Only for a claim that found its gate taken.
 */
export async function overlappingRun(
  s: NodeState,
  job: Job,
  occ: OccurrenceId,
  /** Named in a skip: only a run its holder's mark shows called by the fire time counts. */
  forSkip = true,
): Promise<SkipCause | undefined> {
  const scope = gateScope(occ);
  const prefixes =
    scope === undefined
      ? [`${keys.inflightPrefix(occ.job)}|`, `${keys.inflightPrefix(occ.job)}manual:`]
      : [`${keys.inflightPrefix(occ.job)}${esc(scope)}|`];
  const pages = await Promise.all(prefixes.map((p) => s.store.scan(p, { limit: MAX_GATE_RUNS })));
  // A recovery's record names the run that died (sinceOf): the occurrence has been going since then.
  const found: { rec: InflightRecord; since: RunningSince }[] = [];
  for (const page of pages)
    for (const r of page) {
      const rec = JSON.parse(r.value) as InflightRecord;
      if (rec.shard !== occ.shard || gateScope(rec as OccurrenceId) !== scope) continue;
      const since = sinceOf(rec);
      if (since.startedAt <= occ.fireTime) found.push({ rec, since });
    }
  // The latest: queued behind, its record is enough; skipped, the latest whose holder's mark shows
  // it called by the fire time (run/invoked-mark.ts: a record of a start is written before the
  // handler is called, and may stand for none).
  found.sort((a, b) => b.since.startedAt - a.since.startedAt);
  const best = forSkip
    ? await firstCalledBy(s.store, found, occ.fireTime, ({ rec, since }) => ({
        key: runMarkKey(rec as OccurrenceId, since.token),
        start: since.startedAt,
      }))
    : found[0];
  if (best) return { fireTime: new Date(best.rec.fireTime), node: best.since.node, token: best.since.token };
  const hold = job.spec.lockAtLeastForMs;
  if (hold <= 0) return undefined;
  const recent = await s.store.scan(keys.historyPrefix(occ.job), {
    limit: MAX_RECENT_HISTORY,
    reverse: true,
  });
  for (const r of recent) {
    const e = decodeHistory(r.value, r.key);
    if (e.status === 'skipped' || e.shard !== occ.shard) continue;
    if (gateScope({ ...occ, scheduleId: e.scheduleId }) !== scope) continue;
    const started = e.startedAt.getTime();
    if (started <= occ.fireTime && occ.fireTime < started + hold)
      return { fireTime: e.fireTime, node: e.node, token: e.token };
  }
  return undefined;
}
