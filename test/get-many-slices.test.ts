import { describe, expect, it } from 'vitest';
import { getManyInSlices } from '../src/store/get-many.js';
import { MemoryStore } from '../src/store/memory.js';

// getManyInSlices reads any number of keys in store-sized slices. Keys that belong together (an
// occurrence's in-flight, pending and history records) must be read by one call: split over two,
// a record moving on between the calls could be missed by both reads.
describe('getManyInSlices', () => {
  const setup = async (n: number) => {
    const store = new MemoryStore();
    const keys = Array.from({ length: n }, (_, i) => `k|${String(i).padStart(5, '0')}`);
    await store.apply(
      keys.filter((_, i) => i % 7 === 0).map((key) => ({ op: 'put' as const, key, value: key })),
    );
    const sizes: number[] = [];
    const getMany = store.getMany.bind(store);
    store.getMany = (ks: readonly string[]) => {
      sizes.push(ks.length);
      return getMany(ks);
    };
    return { store, keys, sizes };
  };

  it.each([
    [1, 2_500, [1000, 1000, 500]],
    [3, 2_500, [999, 999, 502]],
    [4, 2_500, [1000, 1000, 500]],
    [3, 900, [900]],
  ])('group %i, %i keys: slices %j, values in order', async (group, n, slices) => {
    const { store, keys, sizes } = await setup(n);
    const values = await getManyInSlices(store, keys, group);
    expect(sizes).toEqual(slices);
    expect(values).toEqual(keys.map((k, i) => (i % 7 === 0 ? k : null)));
    await store.close();
  });
});
