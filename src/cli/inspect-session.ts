/**
 * One short session against a store for the inspection and control commands (`status`, `history`,
 * `locks`, `nodes`, `trigger`, `pause`, `resume`): opens the store, hands over a scheduler that is
 * never started (its read and control calls need no defined jobs and claim nothing), and always
 * closes the store.
 */
import { createScheduler, type Scheduler } from '../scheduler/scheduler.js';
import type { Store } from '../store/types.js';
import { openCliStore, type StoreFlags } from './store-option.js';

export async function withInspector<T>(
  flags: StoreFlags,
  fn: (scheduler: Scheduler, store: Store) => Promise<T>,
): Promise<T> {
  const { store } = await openCliStore(flags);
  try {
    return await fn(createScheduler({ store }), store);
  } finally {
    await store.close().catch(() => {});
  }
}
