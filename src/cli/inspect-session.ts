/**
 * One short session against a store for the inspection and control commands (`status`, `history`,
 * `locks`, `nodes`, `schedules`, `trigger`, `pause`, `resume`): opens the store, hands over a
 * scheduler that is never started (its read and control calls need no defined jobs and claim
 * nothing), and always closes the store.
 *
 * A SQLite file is never created by them (store-presence.ts). The read-only ones create nothing
 * on a server store either (it is not migrated, only looked at), and refuse a store without
 * oncely's schema or with nothing under its prefix, rather than report an empty cluster.
 */
import { createScheduler, type Scheduler } from '../scheduler/scheduler.js';
import type { Store } from '../store/types.js';
import { openCliStore, type StoreFlags, storeUrlOf } from './store-option.js';
import { requireSchema, requireSqliteStore, requireStoreContent } from './store-presence.js';

export async function withInspector<T>(
  flags: StoreFlags,
  fn: (scheduler: Scheduler, store: Store) => Promise<T>,
  { readOnly = true }: { readOnly?: boolean } = {},
): Promise<T> {
  const url = storeUrlOf(flags);
  requireSqliteStore(url, flags.prefix);
  const { store, schema } = await openCliStore(flags, { existing: readOnly });
  try {
    if (readOnly) {
      requireSchema(schema, url, flags.prefix);
      await requireStoreContent(store, url, flags.prefix);
    }
    // Never started: it logs nothing (the command reports failures itself).
    return await fn(createScheduler({ store, logger: false }), store);
  } finally {
    await store.close().catch(() => {});
  }
}
