import { describe, expect, it } from 'vitest';
import { expectCode, type SuiteContext, sleep } from './suite-context.js';

/**
 * Conformance: the lease SPI under `tryLock` — batched `acquire` granting only free keys (one
 * answer per request, unique tokens), `listLeases` by prefix in key order, `release` with
 * `holdUntil`, `extend` that lengthens but never shortens (not even a release's hold), and bad SPI
 * input refused before anything is stored.
 */
export function describeLeases(ctx: SuiteContext): void {
  describe('leases (Store SPI)', () => {
    it('acquires a batch in one call, granting only free keys', async () => {
      const base = ctx.unique('batch');
      const held = await ctx.store.acquire([{ key: `${base}/1`, owner: 'x', leaseMs: 10_000 }]);
      expect(held[0]).not.toBeNull();
      const requests = Array.from({ length: 50 }, (_, i) => ({
        key: `${base}/${i}`,
        owner: 'y',
        leaseMs: 10_000,
      }));
      requests.push({ key: `${base}/2`, owner: 'y', leaseMs: 10_000 }); // repeated key
      const granted = await (await ctx.open()).acquire(requests);
      expect(granted).toHaveLength(51);
      expect(granted[1]).toBeNull();
      expect(granted[50]).toBeNull();
      expect(granted.filter(Boolean)).toHaveLength(49);
      granted.forEach((g, i) => {
        if (g) {
          expect(g.key).toBe(requests[i]!.key);
          expect(g.owner).toBe('y');
          expect(g.expiresAt - g.acquiredAt).toBe(10_000);
        }
      });
      const tokens = granted.filter(Boolean).map((g) => g!.token);
      expect(new Set(tokens).size).toBe(tokens.length);
      expect(await ctx.store.acquire([])).toEqual([]);
    });

    it('lists unexpired leases by prefix in key order', async () => {
      const base = ctx.unique('list');
      await ctx.store.acquire([
        { key: `${base}/b`, owner: 'o', leaseMs: 10_000 },
        { key: `${base}/a`, owner: 'o', leaseMs: 10_000 },
        { key: `${base}/c`, owner: 'o', leaseMs: 50 },
        { key: `${base}x`, owner: 'o', leaseMs: 10_000 },
      ]);
      await sleep(120);
      const listed = await ctx.store.listLeases({ prefix: `${base}/` });
      expect(listed.map((l) => l.key)).toEqual([`${base}/a`, `${base}/b`]);
      expect(await ctx.store.listLeases({ prefix: `${base}/`, limit: 1 })).toHaveLength(1);
    });

    it('releases with holdUntil, keeping the key taken until then', async () => {
      const key = ctx.unique('hold');
      const [lease] = await ctx.store.acquire([{ key, owner: 'o', leaseMs: 10_000 }]);
      const now = await ctx.store.now();
      expect(await ctx.store.release(key, lease!.token, now + 400)).toBe(true);
      expect((await ctx.store.acquire([{ key, owner: 'p', leaseMs: 1000 }]))[0]).toBeNull();
      await sleep(550);
      expect((await ctx.store.acquire([{ key, owner: 'p', leaseMs: 1000 }]))[0]).not.toBeNull();
    });

    it('extends a lease to now + leaseMs, keeping token and owner', async () => {
      const key = ctx.unique('extend-longer');
      const [lease] = await ctx.store.acquire([{ key, owner: 'o', leaseMs: 1_000 }]);
      const before = await ctx.store.now();
      const until = await ctx.store.extend(key, lease!.token, 60_000);
      expect(until).toBeGreaterThanOrEqual(before + 60_000);
      const held = await ctx.store.inspect(key);
      expect(held).toMatchObject({ token: lease!.token, owner: 'o', expiresAt: until });
    });

    it('never shortens a lease: a shorter extend keeps (and answers) the later end', async () => {
      const key = ctx.unique('extend-shorter');
      const [lease] = await ctx.store.acquire([{ key, owner: 'o', leaseMs: 60_000 }]);
      expect(await ctx.store.extend(key, lease!.token, 1_000)).toBe(lease!.expiresAt);
      expect((await ctx.store.inspect(key))?.expiresAt).toBe(lease!.expiresAt);
    });

    it('never cuts a release’s hold short: a late extend by the same token keeps holdUntil', async () => {
      // The scheduler's "done" hold: an extend sent before the release but applied after it (a
      // lost reply, another pooled connection) must not let a late node take the key again.
      const key = ctx.unique('extend-after-hold');
      const [lease] = await ctx.store.acquire([{ key, owner: 'o', leaseMs: 10_000 }]);
      const holdUntil = (await ctx.store.now()) + 60_000;
      expect(await ctx.store.release(key, lease!.token, holdUntil)).toBe(true);
      expect(await ctx.store.extend(key, lease!.token, 1_000)).toBeGreaterThanOrEqual(holdUntil);
      expect(await ctx.store.extend(key, lease!.token, 100)).toBeGreaterThanOrEqual(holdUntil);
      await sleep(250); // past the 100 ms a shortening extend would have left
      expect((await ctx.store.inspect(key))?.expiresAt).toBeGreaterThanOrEqual(holdUntil);
      expect((await ctx.store.acquire([{ key, owner: 'p', leaseMs: 1_000 }]))[0]).toBeNull();
    });

    it('answers null to an extend after a plain release', async () => {
      const key = ctx.unique('extend-released');
      const [lease] = await ctx.store.acquire([{ key, owner: 'o', leaseMs: 10_000 }]);
      expect(await ctx.store.release(key, lease!.token)).toBe(true);
      expect(await ctx.store.extend(key, lease!.token, 10_000)).toBeNull();
      expect(await ctx.store.inspect(key)).toBeNull();
    });

    it('lets exactly one of 8 racing releases of one token answer true', async () => {
      // Each release re-checks the lease on the row's newest version; a second release that waited
      // for the first one's row lock must then see the lease ended, not "held until now".
      const stores = [ctx.store, ...(await Promise.all(Array.from({ length: 7 }, () => ctx.open())))];
      for (let round = 0; round < 20; round++) {
        const key = ctx.unique(`release-race-${round}`);
        const [lease] = await ctx.store.acquire([{ key, owner: 'o', leaseMs: 10_000 }]);
        const answers = await Promise.all(stores.map((s) => s.release(key, lease!.token, 0)));
        expect(answers.filter(Boolean)).toHaveLength(1);
        expect((await ctx.store.acquire([{ key, owner: 'p', leaseMs: 1_000 }]))[0]).not.toBeNull();
      }
    });

    it('rejects bad SPI input with INVALID_ARGUMENT', async () => {
      await expectCode(ctx.store.acquire([{ key: '', owner: 'o', leaseMs: 1 }]), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.acquire([{ key: 'k', owner: 'o', leaseMs: 0 }]), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.acquire([{ key: 'k', owner: 'o', leaseMs: 1.5 }]), 'INVALID_ARGUMENT');
      await expectCode(
        ctx.store.acquire([{ key: 'x'.repeat(513), owner: 'o', leaseMs: 1 }]),
        'INVALID_ARGUMENT',
      );
      await expectCode(ctx.store.extend('k', -1, 10), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.scan('', { limit: 0 }), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.put('k', 42 as never), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.put('k\udc00', 'v'), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.put('k', 'v\ud800'), 'INVALID_ARGUMENT');
      // NUL: PostgreSQL text cannot hold it, so no store takes it, in a key or a value.
      await expectCode(ctx.store.put('k', 'nul \u0000'), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.put('k\u0000', 'v'), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.acquire([{ key: 'k', owner: 'o\u0000', leaseMs: 1 }]), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.scan('p\u0000'), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.scan('p', { after: 'p\u0000' }), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.listLeases({ prefix: 'p\u0000' }), 'INVALID_ARGUMENT');
    });
  });
}
