import type { Store } from '../../store/types.js';
import { decodePageRecord, pageOfRecordKey } from '../claim/page-record.js';
import { keys } from '../keys.js';

/** Page records read per job at most (as backfill's look at them, claim/gated-runs.ts). */
const MAX_PAGES = 10_000;

/**
 * The page runs in flight of stored schedules an upsert replaces, by schedule id: for each, the
 * page and fire time of its latest `run` item that the page won or may still win (not started).
 *
 * A page run judges overlap with the run before it through its due entry, which names that run
 * (`prev`, written by the page that moved the entry: claim/prev-run.ts). An upsert of an id already
 * stored writes a fresh entry under the new version, and without a `prev` the new version's first
 * fire time started beside the old version's run still going: two runs of one schedule at once
 * (simulator, busy faults, schedules re-upserted every few seconds with runs of up to 1.2 s: 7 of
 * 60 seeds). The upsert now names that run in the new entry: the claim of its first fire time
 * waits for it, or skips naming it, as for any fire time behind a page run.
 *
 * One scan of the job's page records per job with a replaced schedule (none for new schedules).
 * A page of the old version claimed after this read — from a due-index read made before the upsert
 * — is not seen: then the two may overlap (docs/scale.md, "Known gap").
 */
export async function replacedRuns(
  store: Store,
  replaced: readonly { job: string; id: string }[],
): Promise<Map<string, { page: string; fireTime: number }>> {
  const found = new Map<string, { page: string; fireTime: number }>();
  const byJob = new Map<string, Set<string>>();
  for (const { job, id } of replaced) {
    let ids = byJob.get(job);
    if (!ids) {
      ids = new Set();
      byJob.set(job, ids);
    }
    ids.add(id);
  }
  await Promise.all(
    [...byJob].map(async ([job, ids]) => {
      for (const r of await store.scan(keys.pageRecordPrefix(job), { limit: MAX_PAGES })) {
        let rec: ReturnType<typeof decodePageRecord>;
        try {
          rec = decodePageRecord(r.value);
        } catch {
          continue; // not a record this build wrote
        }
        const page = pageOfRecordKey(r.key);
        rec.items.forEach((item, i) => {
          if (item.kind !== 'run' || !ids.has(item.id)) return;
          if (rec.started && !rec.started.won.includes(i)) return;
          const known = found.get(item.id);
          if (!known || known.fireTime < item.fireTime) found.set(item.id, { page, fireTime: item.fireTime });
        });
      }
    }),
  );
  return found;
}
