import { pageRunsOf } from '../control/replaced-runs.js';
import type { Candidate } from '../internal-types.js';
import type { NodeState } from '../node-state.js';

/**
 * How long after an upsert that replaced a schedule the claim of the new version's first fire
 * time looks again for a page run of the old version (see {@link prevOfReplaced}).
 */
export const REPLACED_WINDOW_MS = 60_000;

/** The fire time comes within {@link REPLACED_WINDOW_MS} of an upsert that replaced its schedule. */
export function replacedLately(fireTime: number, replacedAt: number | undefined): boolean {
  return replacedAt !== undefined && fireTime - replacedAt < REPLACED_WINDOW_MS;
}

/**
 * The upsert that replaced a schedule named the old version's page run it found in flight
 * (control/replaced-runs.ts), but a node that read the old version's entry before the upsert can
 * still claim it after: its page then ran beside the new version's first fire time (simulator,
 * busy faults, a schedule every second re-upserted 0.5 s after a fire time: the old version's page
 * was granted 73 ms after the upsert and ran on past the new version's first fire time). So the
 * page claim of the new version's first fire time, within {@link REPLACED_WINDOW_MS} of the
 * upsert and naming no run, looks at the job's page records first and names the old version's
 * latest run item there, if any: judgePrev then waits for it or skips naming it, as behind any
 * page run (prev-run.ts). One scan of the job's page records per page claim holding such fire
 * times — only the new version's first: the entry a page moves carries no mark. Such a fire time
 * is not claimed ahead of its start (due-entry.ts, claimableAhead). Not seen: a page of the old
 * version granted after this look, or more than the window after the upsert (docs/scale.md,
 * "Known gaps").
 */
export function prevOfReplaced(s: NodeState, cs: readonly Candidate[]): Promise<void> | undefined {
  const marked = cs.filter(
    (c) =>
      c.pageMove !== undefined &&
      c.pageMove.prev === undefined &&
      replacedLately(c.occ.fireTime, c.pageMove.replacedAt),
  );
  // Nothing to look at (nearly always): no promise, so that a claim without such fire times
  // takes no extra turn of the event loop.
  if (marked.length === 0) return undefined;
  return (async () => {
    // One job per page claim (page-claims.ts): one scan.
    const runs = await pageRunsOf(s.store, marked[0]!.occ.job);
    for (const c of marked) {
      const run = runs.get(c.occ.scheduleId!);
      if (run && run.fireTime < c.occ.fireTime) c.pageMove!.prev = run;
    }
  })();
}
