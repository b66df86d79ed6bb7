import type { Store } from './types.js';
import { MAX_BATCH } from './validate.js';

/**
 * `getMany` of any number of keys: in slices of what a store takes at once (MAX_BATCH), one
 * after another; the values in the order of `wanted`. One round trip per slice.
 *
 * `group`: `wanted` is made of runs of that many keys that belong together (one occurrence's
 * in-flight, pending and history records): a slice holds whole runs only, so each is read by one
 * call — one snapshot on a SQL store. Split over two calls, a record moving on between them
 * (pending → in flight → history) could be missed by both reads, as no single instant shows it.
 */
export async function getManyInSlices(
  store: Store,
  wanted: readonly string[],
  group = 1,
): Promise<(string | null)[]> {
  if (wanted.length <= MAX_BATCH) return store.getMany(wanted);
  const slice = Math.floor(MAX_BATCH / group) * group;
  const values: (string | null)[] = [];
  for (let i = 0; i < wanted.length; i += slice)
    values.push(...(await store.getMany(wanted.slice(i, i + slice))));
  return values;
}
