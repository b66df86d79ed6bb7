import type { Store } from '../../store/types.js';
import { decodePageRecord, pageOfRecordKey } from '../claim/page-record.js';
import { keys } from '../keys.js';

/** Page records read per job at most (as backfill's look at them, claim/gated-runs.ts). */
const MAX_PAGES = 10_000;

/** A page run of a stored schedule: its page and fire time. */
export interface PageRun {
  page: string;
  fireTime: number;
}

/**
 * The page runs in flight of `job`'s stored schedules, by schedule id: for each, the page and
 * fire time of its latest `run` item that the page won or may still win (not started). Read for
 * the schedules an upsert replaces.
 *
 * A page run judges overlap with the run before it through its due entry, which names that run
 * (`prev`, written by the page that moved the entry: claim/prev-run.ts). An upsert of an id already
 * stored writes a fresh entry under the new version, and without a `prev` the new version's first
 * fire time started beside the old version's run still going: two runs of one schedule at once
 * (simulator, busy faults, schedules re-upserted while their runs go: 30 of 50 seeds). The upsert
 * now names that run in the new entry (control/schedules.ts), and the claim of the new version's
 * first fire time looks again (claim/replaced-prev.ts): the claim waits for the run, or skips
 * naming it, as for any fire time behind a page run.
 *
 * One scan of the job's page records (none while no schedule is replaced); a page of the old
 * version granted after it is not seen (docs/scale.md, "Known gaps").
 */
export async function pageRunsOf(store: Store, job: string): Promise<Map<string, PageRun>> {
  const found = new Map<string, PageRun>();
  for (const r of await store.scan(keys.pageRecordPrefix(job), { limit: MAX_PAGES })) {
    let rec: ReturnType<typeof decodePageRecord>;
    try {
      rec = decodePageRecord(r.value);
    } catch {
      continue; // not a record this build wrote
    }
    const page = pageOfRecordKey(r.key);
    rec.items.forEach((item, i) => {
      if (item.kind !== 'run') return;
      if (rec.started && !rec.started.won.includes(i)) return;
      const known = found.get(item.id);
      if (!known || known.fireTime < item.fireTime) found.set(item.id, { page, fireTime: item.fireTime });
    });
  }
  return found;
}

/**
 * {@link pageRunsOf} once per job, for one upsert call: per batch, a bulk re-upsert during a
 * fan-out would read a hundred page records of a thousand items for each batch of 333 schedules.
 */
export function pageRunsOnce(store: Store): (job: string) => Promise<Map<string, PageRun>> {
  const read = new Map<string, Promise<Map<string, PageRun>>>();
  return (job) => {
    let runs = read.get(job);
    if (!runs) {
      runs = pageRunsOf(store, job);
      read.set(job, runs);
    }
    return runs;
  };
}

/**
 * The schedules `replaced` (stored before, of the same job), each with its page run in flight if
 * there is one: an entry for each, so that the upsert marks every replaced entry (`replacedAt`).
 */
export async function replacedRuns(
  runsOf: (job: string) => Promise<Map<string, PageRun>>,
  replaced: readonly { id: string; job: string }[],
): Promise<Map<string, PageRun | undefined>> {
  return new Map(
    await Promise.all(replaced.map(async (x) => [x.id, (await runsOf(x.job)).get(x.id)] as const)),
  );
}
