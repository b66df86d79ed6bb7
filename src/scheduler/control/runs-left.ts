import { bounded, compileBounds } from '../../schedule/bounds.js';
import { nextFireTimes } from '../../schedule/fire-times.js';
import { compileShared } from '../../schedule/shared-triggers.js';
import type { Store, WriteOp } from '../../store/types.js';
import { keys } from '../keys.js';
import type { StoredSchedule } from '../types.js';

/**
 * `maxRuns` of a stored schedule (issue 32 item 2): how many of its occurrences may still start.
 *
 * THE COUNT decides on the due entry: its value carries `left` — the runs that may still start,
 * its own fire time's included (upsert writes `maxRuns`). The claim that wins the entry's fire
 * time F to run it moves the entry on with `left - 1` (a page's `move`, or the start batch of
 * shard 0's per-occurrence claim); one that only settles F (missed and skipped, jumped over,
 * excluded, skipped for overlap) moves it with `left` unchanged; a run's move that leaves 0 ends
 * the schedule — the entry goes to `dueend|…` (a page) or is deleted, and no due entry is left.
 * A fire time has one claimant (the move, or the occurrence lease), and an entry's value is
 * written once, by the move that put it there: no two nodes count the same run, and runs number
 * at most `maxRuns` fleet-wide. No store call is added: the count rides on the move.
 *
 * THE VIEW (`remainingRuns` of `schedules.get/list`, `schedules.next`) is `left|<id>|<v>|<n>`,
 * moved from n to n − 1 in the same batch as the entry (a page: one more `move` op, which
 * fails exactly when the entry's does; per occurrence: a delete and a put, written by the claim's
 * only winner): one more row per run, for schedules with `maxRuns` only.
 *
 * Crash mid-page: the count was taken by the move, before any handler started. The page's
 * recovery runs each item it won again (the same occurrence, attempt + 1): counted once. A page
 * that died before its started mark is recovered as claimed-but-unstarted: its items run, so
 * the count is exact again. A per-occurrence claim that died before its start batch wrote
 * nothing: the entry did not move, the fire time is offered again.
 * With overlap `queue` (per-occurrence claims), a fire time counts when it is queued: one
 * superseded in the queue (recorded skipped, `superseded`) is not given back.
 */
export function countDown(id: string, v: string, left: number): WriteOp[] {
  return [
    { op: 'delete', key: keys.runsLeft(id, v, left) },
    { op: 'put', key: keys.runsLeft(id, v, left - 1), value: '' },
  ];
}

/** The remaining-runs record written with a schedule's first due entry. */
export function firstCount(id: string, v: string, maxRuns: number): WriteOp {
  return { op: 'put', key: keys.runsLeft(id, v, maxRuns), value: '' };
}

/** The version (`v`) of each schedule view made from a record (schedules.ts publicView). */
const versions = new WeakMap<StoredSchedule, string>();

/** Remembers the version of a schedule view: {@link withRunsLeft} reads its remaining-runs record by it. */
export function rememberVersion(view: StoredSchedule, v: string): StoredSchedule {
  if (view.maxRuns !== undefined) versions.set(view, v);
  return view;
}

/**
 * The runs that may still start of stored schedule `id` of version `v` with `maxRuns` (one scan
 * of its remaining-runs record; `next()` and the views read it).
 */
export async function runsLeftOf(store: Store, id: string, v: string, maxRuns: number): Promise<number> {
  const [found] = await store.scan(keys.runsLeftPrefix(id, v), { limit: 1 });
  // None: the schedule's first write is under way (its record landed first in a split batch).
  if (!found) return maxRuns;
  return Number(found.key.slice(found.key.lastIndexOf('|') + 1));
}

/**
 * Schedule views as `get`/`list` show them: with `remainingRuns` (with `maxRuns`: one scan each)
 * and `ended` (with `maxRuns` or `endAt`); any other as it is (no read, no field added).
 */
export async function withRunsLeft(store: Store, views: StoredSchedule[]): Promise<StoredSchedule[]> {
  if (!views.some((x) => x.maxRuns !== undefined || x.endAt !== undefined)) return views;
  let now: Promise<number> | undefined;
  return Promise.all(
    views.map(async (view) => {
      if (view.maxRuns === undefined && view.endAt === undefined) return view;
      const v = versions.get(view);
      const left =
        view.maxRuns === undefined || v === undefined
          ? undefined
          : await runsLeftOf(store, view.id, v, view.maxRuns);
      let ended = left === 0;
      if (!ended && view.endAt !== undefined) {
        const { startAt, endAt } = view;
        try {
          const what = `schedule ${JSON.stringify(view.id)}`;
          const trigger = bounded(compileShared(view, what), compileBounds({ startAt, endAt }, what));
          now ??= store.now();
          ended = nextFireTimes(trigger, await now, 1).length === 0;
        } catch {
          // A record this build cannot read: shown as stored.
        }
      }
      return { ...view, ...(left !== undefined && { remainingRuns: left }), ended };
    }),
  );
}

/** Deletes of every remaining-runs record of schedule `id` (all versions: an upsert or remove ends them). */
export async function staleCounts(store: Store, id: string): Promise<WriteOp[]> {
  const found = await store.scan(keys.runsLeftPrefix(id), { limit: 100 });
  return found.map((r) => ({ op: 'delete', key: r.key }));
}
