import { describe, expect, it } from 'vitest';
import { type SuiteContext, sleep } from './suite-context.js';

/**
 * Conformance: `sweep` deletes only expired leases and records, in batches bounded by `limit`;
 * live leases and records without a ttl survive it.
 */
export function describeSweep(ctx: SuiteContext): void {
  describe('sweeping', () => {
    it('deletes expired leases and records in bounded batches', async () => {
      const base = ctx.unique('sweep');
      await ctx.store.acquire(
        Array.from({ length: 5 }, (_, i) => ({ key: `${base}/l${i}`, owner: 'o', leaseMs: 30 })),
      );
      for (let i = 0; i < 5; i++) await ctx.store.put(`${base}/r${i}`, 'v', { ttlMs: 30 });
      await ctx.store.put(`${base}/keep`, 'v');
      const [live] = await ctx.store.acquire([{ key: `${base}/live`, owner: 'o', leaseMs: 60_000 }]);
      await sleep(100);
      // Other tests may have left expired rows too: sweep until nothing is left, in small batches.
      let first = await ctx.store.sweep({ limit: 2 });
      expect(first.leases).toBeLessThanOrEqual(2);
      expect(first.records).toBeLessThanOrEqual(2);
      for (let i = 0; i < 10_000 && (first.leases > 0 || first.records > 0); i++)
        first = await ctx.store.sweep({ limit: 500 });
      expect(await ctx.store.get(`${base}/keep`)).toBe('v');
      expect((await ctx.store.inspect(`${base}/live`))?.token).toBe(live!.token);
      expect(await ctx.store.scan(`${base}/r`)).toEqual([]);
    });
  });
}
