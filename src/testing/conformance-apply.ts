import { describe, expect, it, vi } from 'vitest';
import type { WriteOp } from '../store/types.js';
import { MAX_BATCH } from '../store/validate.js';
import { expectOddCompareDelete } from './odd-data.js';
import { expectCode, type SuiteContext, sleep } from './suite-context.js';

/**
 * Conformance: `apply`, the batched record writes and lease releases — in order, one result per
 * op, fencing and `holdUntil` as `release`, compare-and-delete (`ifValue`), validated before
 * anything is applied, at most MAX_BATCH ops, expiry on the store clock.
 */
export function describeApply(ctx: SuiteContext): void {
  describe('apply (batched writes)', () => {
    it('applies mixed puts, deletes and releases in order, one result per op', async () => {
      const base = ctx.unique('apply');
      await ctx.store.put(`${base}/old`, 'old');
      const [a, b] = await ctx.store.acquire([
        { key: `${base}/a`, owner: 'o', leaseMs: 10_000 },
        { key: `${base}/b`, owner: 'o', leaseMs: 10_000 },
      ]);
      const results = await ctx.store.apply([
        { op: 'put', key: `${base}/new`, value: "new 🚀 'quoted'" },
        { op: 'delete', key: `${base}/old` },
        { op: 'release', key: `${base}/a`, token: a!.token },
        { op: 'delete', key: `${base}/never` },
        { op: 'release', key: `${base}/b`, token: b!.token + 1 },
        { op: 'release', key: `${base}/free`, token: a!.token },
        { op: 'put', key: `${base}/empty`, value: '' },
      ]);
      expect(results).toEqual([true, true, true, false, false, false, true]);
      const other = await ctx.open();
      expect(await other.get(`${base}/new`)).toBe("new 🚀 'quoted'");
      expect(await other.get(`${base}/empty`)).toBe('');
      expect(await other.get(`${base}/old`)).toBeNull();
      expect(await other.inspect(`${base}/a`)).toBeNull();
      expect((await other.inspect(`${base}/b`))?.token).toBe(b!.token);
      const [again] = await other.acquire([{ key: `${base}/a`, owner: 'p', leaseMs: 10_000 }]);
      expect(again!.token).toBeGreaterThan(a!.token);
    });

    it('releases with holdUntil in a batch, keeping the key taken until then', async () => {
      const key = ctx.unique('apply-hold');
      const [lease] = await ctx.store.acquire([{ key, owner: 'o', leaseMs: 10_000 }]);
      const hold = (await ctx.store.now()) + 400;
      const [released] = await ctx.store.apply([
        { op: 'release', key, token: lease!.token, holdUntil: hold },
      ]);
      expect(released).toBe(true);
      const held = await ctx.store.inspect(key);
      expect(held?.token).toBe(lease!.token);
      expect(held?.expiresAt).toBe(hold);
      expect((await ctx.store.acquire([{ key, owner: 'p', leaseMs: 1000 }]))[0]).toBeNull();
      await sleep(550);
      const [next] = await ctx.store.acquire([{ key, owner: 'p', leaseMs: 1000 }]);
      expect(next!.token).toBeGreaterThan(lease!.token);
    });

    it('refuses a stale token in a batch without disturbing the holder', async () => {
      const key = ctx.unique('apply-stale');
      const [stale] = await ctx.store.acquire([{ key, owner: 'old', leaseMs: 200 }]);
      await sleep(350);
      const [current] = await (await ctx.open()).acquire([{ key, owner: 'new', leaseMs: 10_000 }]);
      expect(current).not.toBeNull();
      const now = await ctx.store.now();
      const results = await ctx.store.apply([
        { op: 'release', key, token: stale!.token },
        { op: 'release', key, token: stale!.token, holdUntil: now + 60_000 },
        { op: 'put', key: `${key}/record`, value: 'v' },
      ]);
      expect(results).toEqual([false, false, true]);
      const held = await ctx.store.inspect(key);
      expect(held?.token).toBe(current!.token);
      expect(held?.owner).toBe('new');
      expect(held?.expiresAt).toBe(current!.expiresAt);
    });

    it('lets later ops see earlier ones on the same key', async () => {
      const base = ctx.unique('apply-same');
      await ctx.store.put(`${base}/2`, 'before');
      const results = await ctx.store.apply([
        { op: 'put', key: `${base}/1`, value: 'x' },
        { op: 'delete', key: `${base}/1` },
        { op: 'delete', key: `${base}/2` },
        { op: 'put', key: `${base}/2`, value: 'after' },
        { op: 'delete', key: `${base}/3` },
        { op: 'delete', key: `${base}/3` },
        { op: 'put', key: `${base}/3`, value: 'y', ttlMs: 60_000 },
        { op: 'put', key: `${base}/3`, value: 'z' },
      ]);
      expect(results).toEqual([true, true, true, true, false, false, true, true]);
      expect(await ctx.store.get(`${base}/1`)).toBeNull();
      expect(await ctx.store.get(`${base}/2`)).toBe('after');
      expect(await ctx.store.scan(`${base}/3`)).toEqual([{ key: `${base}/3`, value: 'z', expiresAt: null }]);
      expect(
        await ctx.store.apply([
          { op: 'put', key: `${base}/4`, value: 'a' },
          { op: 'put', key: `${base}/4`, value: 'b', ttlMs: 60_000 },
          { op: 'delete', key: `${base}/2` },
          { op: 'delete', key: `${base}/2` },
          { op: 'put', key: `${base}/5`, value: 'c' },
          { op: 'delete', key: `${base}/5` },
          { op: 'delete', key: `${base}/5` },
        ]),
      ).toEqual([true, true, true, false, true, true, false]);
      expect(await ctx.store.get(`${base}/4`)).toBe('b');
      expect(await ctx.store.get(`${base}/2`)).toBeNull();
      expect(await ctx.store.get(`${base}/5`)).toBeNull();
    });

    it('compare-and-delete: deletes only a live record holding exactly ifValue; false fails nothing', async () => {
      const base = ctx.unique('apply-if');
      await ctx.store.put(`${base}/r`, 'v1');
      const [lease] = await ctx.store.acquire([{ key: `${base}/lease`, owner: 'o', leaseMs: 10_000 }]);
      // A mismatch answers false like a stale release: the rest of the batch is applied.
      expect(
        await ctx.store.apply([
          { op: 'delete', key: `${base}/r`, ifValue: 'v2' },
          { op: 'delete', key: `${base}/r`, ifValue: 'V1' },
          { op: 'delete', key: `${base}/r`, ifValue: 'v1 ' },
          { op: 'delete', key: `${base}/r`, ifValue: '' },
          { op: 'delete', key: `${base}/absent`, ifValue: 'v1' },
          { op: 'put', key: `${base}/other`, value: 'x' },
          { op: 'release', key: `${base}/lease`, token: lease!.token },
        ]),
      ).toEqual([false, false, false, false, false, true, true]);
      const other = await ctx.open();
      expect(await other.get(`${base}/r`)).toBe('v1');
      expect(await other.get(`${base}/other`)).toBe('x');
      expect(await other.get(`${base}/absent`)).toBeNull();
      expect(await other.inspect(`${base}/lease`)).toBeNull();
      // A batch of one (engines run it alone), then a match in a larger batch.
      expect(await ctx.store.apply([{ op: 'delete', key: `${base}/r`, ifValue: 'nope' }])).toEqual([false]);
      expect(await ctx.store.apply([{ op: 'delete', key: `${base}/r`, ifValue: 'v1' }])).toEqual([true]);
      expect(await other.get(`${base}/r`)).toBeNull();
      await ctx.store.put(`${base}/empty`, '');
      expect(
        await ctx.store.apply([
          { op: 'delete', key: `${base}/empty`, ifValue: '' },
          { op: 'put', key: `${base}/after`, value: 'y' },
        ]),
      ).toEqual([true, true]);
      expect(await other.get(`${base}/empty`)).toBeNull();
    });

    it('compare-and-delete: an expired record answers false', async () => {
      const base = ctx.unique('apply-if-ttl');
      await ctx.store.put(`${base}/short`, 'v', { ttlMs: 150 });
      await ctx.store.put(`${base}/long`, 'v', { ttlMs: 60_000 });
      await sleep(300);
      expect(
        await ctx.store.apply([
          { op: 'delete', key: `${base}/short`, ifValue: 'v' },
          { op: 'delete', key: `${base}/long`, ifValue: 'v' },
        ]),
      ).toEqual([false, true]);
      expect(await ctx.store.apply([{ op: 'delete', key: `${base}/short`, ifValue: 'v' }])).toEqual([false]);
      expect(await ctx.store.get(`${base}/short`)).toBeNull();
      expect(await ctx.store.get(`${base}/long`)).toBeNull();
    });

    it('compare-and-delete: later ops on the key see its outcome', async () => {
      const base = ctx.unique('apply-if-same');
      await ctx.store.put(`${base}/2`, 'x');
      await ctx.store.put(`${base}/3`, 'x');
      await ctx.store.put(`${base}/4`, 'x');
      await ctx.store.put(`${base}/5`, 'x');
      expect(
        await ctx.store.apply([
          { op: 'put', key: `${base}/1`, value: 'a' },
          { op: 'delete', key: `${base}/1`, ifValue: 'b' },
          { op: 'delete', key: `${base}/1`, ifValue: 'a' },
          { op: 'delete', key: `${base}/1`, ifValue: 'a' },
          { op: 'delete', key: `${base}/2`, ifValue: 'x' },
          { op: 'put', key: `${base}/2`, value: 'y' },
          { op: 'delete', key: `${base}/3`, ifValue: 'nope' },
          { op: 'delete', key: `${base}/3` },
          { op: 'delete', key: `${base}/4`, ifValue: 'nope' },
          { op: 'put', key: `${base}/4`, value: 'z' },
          { op: 'delete', key: `${base}/5`, ifValue: 'nope' },
          { op: 'delete', key: `${base}/5`, ifValue: 'x' },
          { op: 'delete', key: `${base}/5`, ifValue: 'x' },
          { op: 'put', key: `${base}/6`, value: 'w' },
          { op: 'delete', key: `${base}/6` },
          { op: 'delete', key: `${base}/6`, ifValue: 'w' },
        ]),
      ).toEqual([
        true,
        false,
        true,
        false,
        true,
        true,
        false,
        true,
        false,
        true,
        false,
        true,
        false,
        true,
        true,
        false,
      ]);
      expect(await ctx.store.getMany([1, 2, 3, 4, 5, 6].map((i) => `${base}/${i}`))).toEqual([
        null,
        'y',
        null,
        'z',
        null,
        null,
      ]);
    });

    it('compare-and-delete racing a rewrite: the newer value always survives', async () => {
      const base = ctx.unique('apply-if-race');
      const stores = await Promise.all(Array.from({ length: 8 }, () => ctx.open()));
      for (let round = 0; round < 3; round++) {
        const key = `${base}/${round}`;
        await ctx.store.put(key, 'old');
        const [deletes, rewrite] = await Promise.all([
          Promise.all(stores.map((s) => s.apply([{ op: 'delete', key, ifValue: 'old' }]))),
          stores[round]!.apply([{ op: 'put', key, value: 'new' }]),
        ]);
        expect(rewrite).toEqual([true]);
        expect(deletes.filter(([deleted]) => deleted).length).toBeLessThanOrEqual(1);
        expect(await ctx.store.get(key)).toBe('new');
        // Nothing racing: exactly one of the eight deletes the record.
        const all = await Promise.all(stores.map((s) => s.apply([{ op: 'delete', key, ifValue: 'new' }])));
        expect(all.filter(([deleted]) => deleted).length).toBe(1);
        expect(await ctx.store.get(key)).toBeNull();
      }
    });

    it('compare-and-delete matches odd values byte for byte', async () => {
      await expectOddCompareDelete(ctx.store, ctx.unique('apply-if-odd'));
    }, 30_000);

    it('applies repeated releases of one lease in order', async () => {
      const key = ctx.unique('apply-twice');
      const [lease] = await ctx.store.acquire([{ key, owner: 'o', leaseMs: 10_000 }]);
      const now = await ctx.store.now();
      const results = await ctx.store.apply([
        { op: 'release', key, token: lease!.token, holdUntil: now + 60_000 },
        { op: 'release', key, token: lease!.token + 1 },
        { op: 'release', key, token: lease!.token },
        { op: 'release', key, token: lease!.token },
      ]);
      expect(results).toEqual([true, false, true, false]);
      expect(await ctx.store.inspect(key)).toBeNull();
      const [next] = await ctx.store.acquire([{ key, owner: 'p', leaseMs: 10_000 }]);
      expect(next!.token).toBeGreaterThan(lease!.token);
    });

    it('lets exactly one of 8 racing batches delete a record and release a lease', async () => {
      const base = ctx.unique('apply-race');
      await ctx.store.put(`${base}/record`, 'v');
      const [lease] = await ctx.store.acquire([{ key: `${base}/lease`, owner: 'o', leaseMs: 10_000 }]);
      const stores = await Promise.all(Array.from({ length: 8 }, () => ctx.open()));
      const results = await Promise.all(
        stores.map((s, i) =>
          s.apply([
            { op: 'put', key: `${base}/by/${i}`, value: String(i) },
            { op: 'delete', key: `${base}/record` },
            { op: 'release', key: `${base}/lease`, token: lease!.token },
          ]),
        ),
      );
      expect(results.filter((r) => r[1]).length).toBe(1);
      expect(results.filter((r) => r[2]).length).toBe(1);
      expect(results.every((r) => r[0])).toBe(true);
      expect(await ctx.store.scan(`${base}/by/`)).toHaveLength(8);
      expect(await ctx.store.get(`${base}/record`)).toBeNull();
      expect(await ctx.store.inspect(`${base}/lease`)).toBeNull();
    });

    it('honours ttl on puts in a batch, on the store clock', async () => {
      const base = ctx.unique('apply-ttl');
      const before = await ctx.store.now();
      expect(
        await ctx.store.apply([
          { op: 'put', key: `${base}/short`, value: 'short', ttlMs: 150 },
          { op: 'put', key: `${base}/long`, value: 'long', ttlMs: 60_000 },
        ]),
      ).toEqual([true, true]);
      const [long] = await ctx.store.scan(`${base}/long`);
      expect(long!.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
      expect(long!.expiresAt).toBeLessThan(before + 70_000);
      await sleep(300);
      expect(await ctx.store.get(`${base}/short`)).toBeNull();
      expect(await ctx.store.apply([{ op: 'delete', key: `${base}/short` }])).toEqual([false]);
      expect(await ctx.store.get(`${base}/long`)).toBe('long');
    });

    it('rejects a bad op with INVALID_ARGUMENT and applies nothing', async () => {
      const key = ctx.unique('apply-bad');
      const leaseKey = `${key}/lease`;
      const [lease] = await ctx.store.acquire([{ key: leaseKey, owner: 'o', leaseMs: 10_000 }]);
      const bad: unknown[] = [
        { op: 'upsert', key, value: 'v' },
        { key, value: 'v' },
        null,
        'put',
        { op: 'put', key: '', value: 'v' },
        { op: 'put', key: 'x'.repeat(513), value: 'v' },
        { op: 'put', key: 'nul\u0000', value: 'v' },
        { op: 'put', key, value: 42 },
        { op: 'put', key, value: 'v\ud800' },
        { op: 'put', key, value: 'nul \u0000' },
        { op: 'put', key, value: 'v', ttlMs: 0 },
        { op: 'put', key, value: 'v', ttlMs: 1.5 },
        { op: 'put', key, value: 'v', ttlMs: '1s' },
        { op: 'delete', key: 'k\udc00' },
        { op: 'delete' },
        { op: 'delete', key, ifValue: 42 },
        { op: 'delete', key, ifValue: null },
        { op: 'delete', key, ifValue: 'nul \u0000' },
        { op: 'delete', key, ifValue: 'v\ud800' },
        { op: 'release', key, token: -1 },
        { op: 'release', key, token: 1.5 },
        { op: 'release', key, token: '1' },
        { op: 'release', key, token: 1, holdUntil: Number.NaN },
        { op: 'release', key, token: 1, holdUntil: -1 },
      ];
      for (const op of bad) {
        const batch = [
          { op: 'put', key, value: 'first' },
          { op: 'release', key: leaseKey, token: lease!.token },
          op,
        ] as WriteOp[];
        await expectCode(ctx.store.apply(batch), 'INVALID_ARGUMENT');
      }
      await expectCode(ctx.store.apply('put' as never), 'INVALID_ARGUMENT');
      expect(await ctx.store.get(key)).toBeNull();
      expect((await ctx.store.inspect(leaseKey))?.token).toBe(lease!.token);
    });

    it(`takes at most ${MAX_BATCH} ops, and an empty batch`, async () => {
      const base = ctx.unique('apply-max');
      const ops = Array.from(
        { length: MAX_BATCH + 1 },
        (_, i): WriteOp => ({ op: 'put', key: `${base}/${i}`, value: 'v' }),
      );
      await expectCode(ctx.store.apply(ops), 'INVALID_ARGUMENT');
      expect(await ctx.store.scan(`${base}/`, { limit: 10 })).toEqual([]);
      expect(await ctx.store.apply([])).toEqual([]);
    });

    it(`writes a batch of ${MAX_BATCH} puts, and deletes them in one`, async () => {
      const base = ctx.unique('apply-many');
      const puts = Array.from(
        { length: MAX_BATCH },
        (_, i): WriteOp => ({ op: 'put', key: `${base}/${String(i).padStart(4, '0')}`, value: `v${i}` }),
      );
      expect(await ctx.store.apply(puts)).toEqual(puts.map(() => true));
      const all = await ctx.store.scan(`${base}/`, { limit: 10_000 });
      expect(all).toHaveLength(MAX_BATCH);
      expect(all.at(-1)?.value).toBe(`v${MAX_BATCH - 1}`);
      const deletes = puts.map((op): WriteOp => ({ op: 'delete', key: op.key }));
      expect(await ctx.store.apply(deletes)).toEqual(puts.map(() => true));
      expect(await ctx.store.scan(`${base}/`)).toEqual([]);
    }, 60_000);

    it('judges expiry by the store clock, not the caller’s Date.now()', async () => {
      const key = ctx.unique('apply-clock');
      const recordKey = `${key}/record`;
      const [lease] = await ctx.store.acquire([{ key, owner: 'o', leaseMs: 10_000 }]);
      const before = await ctx.store.now();
      const spy = vi
        .spyOn(Date, 'now')
        .mockImplementation(() => performance.timeOrigin + performance.now() + 3_600_000);
      try {
        expect(
          await ctx.store.apply([
            { op: 'put', key: recordKey, value: 'v', ttlMs: 10_000 },
            { op: 'release', key, token: lease!.token, holdUntil: before + 5_000 },
          ]),
        ).toEqual([true, true]);
        spy.mockImplementation(() => performance.timeOrigin + performance.now() - 3_600_000);
        const [record] = await ctx.store.scan(recordKey);
        expect(record!.expiresAt).toBeGreaterThanOrEqual(before + 10_000);
        expect(record!.expiresAt).toBeLessThan(before + 40_000);
        expect((await ctx.store.inspect(key))?.expiresAt).toBe(before + 5_000);
        expect(await ctx.store.apply([{ op: 'delete', key: recordKey }])).toEqual([true]);
      } finally {
        spy.mockRestore();
      }
    });
  });
}
