import { describe, expect, it } from 'vitest';
import { type SuiteContext, sleep } from './suite-context.js';

/**
 * Conformance: single records — put/get/overwrite/delete, large values, ttl expiry on the store
 * clock, and `scan` by prefix in key order (reversed, paged by cursor, LIKE metacharacters literal).
 */
export function describeRecords(ctx: SuiteContext): void {
  describe('records', () => {
    it('puts, gets, overwrites and deletes', async () => {
      const key = ctx.unique('rec');
      expect(await ctx.store.get(key)).toBeNull();
      await ctx.store.put(key, '{"a":1}');
      expect(await (await ctx.open()).get(key)).toBe('{"a":1}');
      await ctx.store.put(key, 'second 🚀 \'quoted\' "x"');
      expect(await ctx.store.get(key)).toBe('second 🚀 \'quoted\' "x"');
      expect(await ctx.store.delete(key)).toBe(true);
      expect(await ctx.store.delete(key)).toBe(false);
      expect(await ctx.store.get(key)).toBeNull();
    });

    it('stores large values', async () => {
      const key = ctx.unique('big');
      const value = 'v'.repeat(200_000);
      await ctx.store.put(key, value);
      expect(await ctx.store.get(key)).toBe(value);
    });

    it('expires records after their ttl, on the store clock', async () => {
      const key = ctx.unique('ttl');
      // A second of life: the read right after the write must come within it even on a loaded
      // host (CI, SQLite: 150 ms had passed between the put and the get, and the record was gone).
      await ctx.store.put(key, 'short', { ttlMs: 1_000 });
      expect(await ctx.store.get(key)).toBe('short');
      await sleep(1_200);
      expect(await ctx.store.get(key)).toBeNull();
      expect(await ctx.store.scan(key)).toEqual([]);
      expect(await ctx.store.delete(key)).toBe(false);
      await ctx.store.put(key, 'again');
      expect(await ctx.store.get(key)).toBe('again');
    });

    it('scans by prefix in key order, reversed, with a cursor and a limit', async () => {
      const base = ctx.unique('scan');
      const keys = ['a', 'b', 'b2', 'c', 'd%', 'd_', 'é', '🔒'].map((k) => `${base}/${k}`);
      for (const k of [...keys].reverse()) await ctx.store.put(k, k.toUpperCase());
      await ctx.store.put(`${base}-other`, 'x');
      await ctx.store.put(`${base}/gone`, 'x', { ttlMs: 50 });
      await sleep(100);
      const all = await ctx.store.scan(`${base}/`);
      expect(all.map((r) => r.key)).toEqual(keys);
      expect(all[0]!.value).toBe(keys[0]!.toUpperCase());
      expect(all[0]!.expiresAt).toBeNull();
      const reversed = await ctx.store.scan(`${base}/`, { reverse: true });
      expect(reversed.map((r) => r.key)).toEqual([...keys].reverse());
      const page1 = await ctx.store.scan(`${base}/`, { limit: 3 });
      const page2 = await ctx.store.scan(`${base}/`, { limit: 3, after: page1.at(-1)!.key });
      expect([...page1, ...page2].map((r) => r.key)).toEqual(keys.slice(0, 6));
      const back = await ctx.store.scan(`${base}/`, { reverse: true, limit: 2, after: keys[3]! });
      expect(back.map((r) => r.key)).toEqual([keys[2], keys[1]]);
      const like = await ctx.store.scan(`${base}/d%`);
      expect(like.map((r) => r.key)).toEqual([`${base}/d%`]);
      const ttl = await ctx.store.scan(`${base}-other`);
      expect(ttl).toHaveLength(1);
    });

    it('reports expiry times in store time', async () => {
      const key = ctx.unique('exp');
      const before = await ctx.store.now();
      await ctx.store.put(key, 'v', { ttlMs: 60_000 });
      const [rec] = await ctx.store.scan(key);
      expect(rec!.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
      expect(rec!.expiresAt).toBeLessThan(before + 70_000);
    });
  });
}
