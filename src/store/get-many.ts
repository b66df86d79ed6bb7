import type { Store } from './types.js';
import { MAX_BATCH } from './validate.js';

/**
 * `getMany` of any number of keys: in slices of what a store takes at once (MAX_BATCH), one
 * after another; the values in the order of `wanted`. One round trip per slice.
 */
export async function getManyInSlices(store: Store, wanted: readonly string[]): Promise<(string | null)[]> {
  if (wanted.length <= MAX_BATCH) return store.getMany(wanted);
  const values: (string | null)[] = [];
  for (let i = 0; i < wanted.length; i += MAX_BATCH)
    values.push(...(await store.getMany(wanted.slice(i, i + MAX_BATCH))));
  return values;
}
