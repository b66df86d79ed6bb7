import { expect, it } from 'vitest';
import { BaseStore, MAX_BATCH, MemoryStore, openStore, type WriteOp } from '../src/index.js';
import type { NormalizedWriteOp } from '../src/store/validate.js';
import { describeStore } from '../src/testing/index.js';

describeStore('memory', async () => new MemoryStore({ space: 'conformance' }));
describeStore('memory via openStore', async () => openStore('memory:conformance-url'));

it('counts an empty memory store as 0 and reads nothing from it', async () => {
  const store = new MemoryStore();
  expect(store.capabilities).toMatchObject({ batchGet: true, serverCount: true });
  expect(await store.count('')).toBe(0);
  expect(await store.getMany(['a', 'a'])).toEqual([null, null]);
});

/** BaseStore's own (default) implementations, which MemoryStore overrides. */
const defaults = BaseStore.prototype as unknown as {
  doGetMany(keys: readonly string[]): Promise<(string | null)[]>;
  doCount(prefix: string): Promise<number>;
  doApply(ops: readonly NormalizedWriteOp[]): Promise<boolean[]>;
};

/** A store that keeps BaseStore's defaults for getMany (parallel gets) and count (paging scan). */
class DefaultReadsStore extends MemoryStore {
  override readonly capabilities = { ...new MemoryStore().capabilities, batchGet: false, serverCount: false };
  protected override doGetMany(keys: readonly string[]): Promise<(string | null)[]> {
    return defaults.doGetMany.call(this, keys);
  }
  protected override doCount(prefix: string): Promise<number> {
    return defaults.doCount.call(this, prefix);
  }
}

it('BaseStore’s default getMany and count (for stores written before them) give the same answers', async () => {
  const store = new DefaultReadsStore();
  const ops: WriteOp[] = Array.from({ length: 25_001 }, (_, i) => ({
    op: 'put',
    key: `k/${i}`,
    value: `${i}`,
  }));
  for (let i = 0; i < ops.length; i += MAX_BATCH) await store.apply(ops.slice(i, i + MAX_BATCH));
  await store.put('k/short', 'v', { ttlMs: 50 });
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(await store.count('')).toBe(25_001);
  expect(await store.count('k/1')).toBe(1 + 10 + 100 + 1000 + 10_000);
  expect(await store.getMany(['k/7', 'k/short', 'nope', 'k/7'])).toEqual(['7', null, null, '7']);
  await expect(store.getMany(Array.from({ length: MAX_BATCH + 1 }, () => 'k'))).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
  });
});

/** A store that keeps BaseStore's op-by-op default apply. */
class DefaultApplyStore extends MemoryStore {
  override readonly capabilities = { ...new MemoryStore().capabilities, batchApply: false };
  protected override doApply(ops: readonly NormalizedWriteOp[]): Promise<boolean[]> {
    return defaults.doApply.call(this, ops);
  }
}

it('BaseStore’s default apply refuses a compare-and-delete it could not make atomic, applying nothing', async () => {
  const store = new DefaultApplyStore();
  await store.put('k', 'v');
  await expect(
    store.apply([
      { op: 'put', key: 'other', value: 'x' },
      { op: 'delete', key: 'k', ifValue: 'v' },
    ]),
  ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/ifValue/) });
  expect(await store.getMany(['k', 'other'])).toEqual(['v', null]);
  expect(await store.apply([{ op: 'delete', key: 'k' }])).toEqual([true]);
});
