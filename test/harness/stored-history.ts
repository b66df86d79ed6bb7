/**
 * Puts one history entry of an occurrence straight into a store, as an earlier run (on another
 * node, maybe long gone) would have left it: for tests that start from a store in a given state.
 */
import { encodeHistory } from '../../src/scheduler/finish/history.js';
import { keys, type OccurrenceId } from '../../src/scheduler/keys.js';
import type { HistoryEntry } from '../../src/scheduler/types.js';
import type { Store } from '../../src/store/types.js';

/** Attempt 1, token 1, source `schedule`, started at the fire time, unless `entry` says otherwise. */
export async function putHistoryEntry(
  store: Store,
  occ: OccurrenceId,
  entry: Pick<HistoryEntry, 'status' | 'node'> & Partial<HistoryEntry>,
): Promise<void> {
  const full: HistoryEntry = {
    job: occ.job,
    fireTime: new Date(occ.fireTime),
    attempt: 1,
    token: 1,
    source: 'schedule',
    startedAt: new Date(occ.fireTime),
    ...entry,
  };
  await store.put(keys.history(occ, full.attempt), encodeHistory(full));
}
