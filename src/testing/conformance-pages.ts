import { describe, expect, it } from 'vitest';
import type { PageOp, Store } from '../store/types.js';
import { MAX_BATCH } from '../store/validate.js';
import { expectCode, type SuiteContext, sleep } from './suite-context.js';

/** The record `key` as a scan sees it (value and expiry), or undefined when it is absent or expired. */
async function record(store: Store, key: string) {
  const [r] = await store.scan(key, { limit: 1 });
  return r?.key === key ? r : undefined;
}

/**
 * Conformance: `claimPage` — a lease and a page of puts, put-if-absent creates and
 * compare-and-moves, applied only with the lease, atomically, with a token above every earlier
 * one; racing pages split the work with no item claimed twice. A store that does not state
 * `capabilities.pages` must refuse the call (INVALID_ARGUMENT) and apply nothing.
 */
export function describePages(ctx: SuiteContext): void {
  describe('claimPage (pages of work under one lease)', () => {
    /** Whether the store offers pages; if not, checks that it refuses them cleanly. */
    const offered = async (): Promise<boolean> => {
      if (ctx.store.capabilities.pages) return true;
      const key = ctx.unique('no-pages');
      await expectCode(
        ctx.store.claimPage({ key, owner: 'o', leaseMs: 10_000 }, [
          { op: 'put', key: `${key}/r`, value: 'v' },
        ]),
        'INVALID_ARGUMENT',
      );
      expect(await ctx.store.inspect(key)).toBeNull();
      expect(await ctx.store.get(`${key}/r`)).toBeNull();
      return false;
    };

    it('grants the lease and applies puts, creates and moves, one result per op', async () => {
      if (!(await offered())) return;
      const base = ctx.unique('page');
      await ctx.store.put(`${base}/due/1`, 'one');
      await ctx.store.put(`${base}/due/2`, 'two', { ttlMs: 60_000 });
      await ctx.store.put(`${base}/taken`, 'kept');
      await ctx.store.put(`${base}/next/2`, 'stale entry');
      const before = await ctx.store.now();
      const { lease, results } = await ctx.store.claimPage(
        { key: `${base}/lease`, owner: 'n1', leaseMs: 10_000 },
        [
          { op: 'move', from: `${base}/due/1`, to: `${base}/next/1`, value: 'moved 1 🚀' },
          { op: 'move', from: `${base}/due/2`, to: `${base}/next/2`, value: 'moved 2', ttlMs: 5_000 },
          { op: 'move', from: `${base}/due/none`, to: `${base}/next/none`, value: 'never' },
          { op: 'create', key: `${base}/new`, value: "new 'quoted'" },
          { op: 'create', key: `${base}/taken`, value: 'lost' },
          { op: 'put', key: `${base}/record`, value: '' },
        ],
      );
      expect(lease).not.toBeNull();
      expect(lease!.owner).toBe('n1');
      expect(lease!.acquiredAt).toBeGreaterThanOrEqual(before);
      expect(lease!.expiresAt).toBe(lease!.acquiredAt + 10_000);
      expect(results).toEqual([true, true, false, true, false, true]);
      const other = await ctx.open();
      expect((await other.inspect(`${base}/lease`))?.token).toBe(lease!.token);
      expect(await other.get(`${base}/due/1`)).toBeNull();
      expect(await other.get(`${base}/due/2`)).toBeNull();
      expect(await record(other, `${base}/next/1`)).toEqual({
        key: `${base}/next/1`,
        value: 'moved 1 🚀',
        expiresAt: null,
      });
      // A move replaces what `to` held, and takes its expiry from the op (on the lease's instant).
      expect(await record(other, `${base}/next/2`)).toEqual({
        key: `${base}/next/2`,
        value: 'moved 2',
        expiresAt: lease!.acquiredAt + 5_000,
      });
      expect(await other.get(`${base}/next/none`)).toBeNull();
      expect(await other.get(`${base}/new`)).toBe("new 'quoted'");
      expect(await other.get(`${base}/taken`)).toBe('kept');
      expect(await other.get(`${base}/record`)).toBe('');
    });

    it('applies nothing when the lease is held, and grants an expired one with a higher token', async () => {
      if (!(await offered())) return;
      const base = ctx.unique('page-held');
      const [held] = await ctx.store.acquire([{ key: `${base}/lease`, owner: 'other', leaseMs: 400 }]);
      await ctx.store.put(`${base}/due`, 'due');
      const page: PageOp[] = [
        { op: 'move', from: `${base}/due`, to: `${base}/next`, value: 'moved' },
        { op: 'create', key: `${base}/created`, value: 'c' },
        { op: 'put', key: `${base}/put`, value: 'p' },
      ];
      const refused = await ctx.store.claimPage({ key: `${base}/lease`, owner: 'n1', leaseMs: 10_000 }, page);
      expect(refused).toEqual({ lease: null, results: [false, false, false] });
      expect(await ctx.store.get(`${base}/due`)).toBe('due');
      expect(await ctx.store.get(`${base}/next`)).toBeNull();
      expect(await ctx.store.get(`${base}/created`)).toBeNull();
      expect(await ctx.store.get(`${base}/put`)).toBeNull();
      expect((await ctx.store.inspect(`${base}/lease`))?.owner).toBe('other');
      await sleep(550);
      const taken = await ctx.store.claimPage({ key: `${base}/lease`, owner: 'n2', leaseMs: 10_000 }, page);
      expect(taken.lease!.token).toBeGreaterThan(held!.token);
      expect(taken.results).toEqual([true, true, true]);
      expect(await ctx.store.get(`${base}/next`)).toBe('moved');
    });

    it('draws a token above every token granted before, for any key', async () => {
      if (!(await offered())) return;
      const base = ctx.unique('page-token');
      const other = await ctx.open();
      const [first] = await other.acquire([{ key: `${base}/a`, owner: 'o', leaseMs: 10_000 }]);
      const { lease } = await ctx.store.claimPage({ key: `${base}/page`, owner: 'o', leaseMs: 10_000 }, []);
      const [after] = await other.acquire([{ key: `${base}/b`, owner: 'o', leaseMs: 10_000 }]);
      expect(lease!.token).toBeGreaterThan(first!.token);
      expect(after!.token).toBeGreaterThan(lease!.token);
    });

    it('creates over an expired record and moves no expired one', async () => {
      if (!(await offered())) return;
      const base = ctx.unique('page-expired');
      await ctx.store.put(`${base}/old`, 'old', { ttlMs: 200 });
      await ctx.store.put(`${base}/gone`, 'gone', { ttlMs: 200 });
      await ctx.store.put(`${base}/target`, 'target stays');
      await sleep(350);
      const { results } = await ctx.store.claimPage({ key: `${base}/lease`, owner: 'o', leaseMs: 10_000 }, [
        { op: 'create', key: `${base}/old`, value: 'fresh', ttlMs: 60_000 },
        { op: 'move', from: `${base}/gone`, to: `${base}/target`, value: 'overwritten' },
      ]);
      expect(results).toEqual([true, false]);
      expect(await ctx.store.get(`${base}/old`)).toBe('fresh');
      expect(await ctx.store.get(`${base}/target`)).toBe('target stays');
    });

    it('validates every op before anything is sent', async () => {
      if (!(await offered())) return;
      const base = ctx.unique('page-bad');
      await ctx.store.put(`${base}/due`, 'due');
      const lease = { key: `${base}/lease`, owner: 'o', leaseMs: 10_000 };
      const move = { op: 'move', from: `${base}/due`, to: `${base}/next`, value: 'v' } as const;
      // A key twice in one page (a move's `to` is another op's key).
      await expectCode(
        ctx.store.claimPage(lease, [move, { op: 'put', key: `${base}/next`, value: 'x' }]),
        'INVALID_ARGUMENT',
      );
      await expectCode(
        ctx.store.claimPage(lease, [move, { op: 'put', key: '', value: 'x' }]),
        'INVALID_ARGUMENT',
      );
      await expectCode(
        ctx.store.claimPage(lease, [move, { op: 'delete', key: `${base}/x` } as unknown as PageOp]),
        'INVALID_ARGUMENT',
      );
      await expectCode(ctx.store.claimPage(lease, [{ ...move, value: 'nul\u0000' }]), 'INVALID_ARGUMENT');
      await expectCode(ctx.store.claimPage({ ...lease, leaseMs: 0 }, [move]), 'INVALID_ARGUMENT');
      const tooMany: PageOp[] = Array.from({ length: MAX_BATCH + 1 }, (_, i) => ({
        op: 'put',
        key: `${base}/many/${i}`,
        value: 'v',
      }));
      await expectCode(ctx.store.claimPage(lease, tooMany), 'INVALID_ARGUMENT');
      expect(await ctx.store.inspect(lease.key)).toBeNull();
      expect(await ctx.store.get(`${base}/due`)).toBe('due');
      expect(await ctx.store.get(`${base}/next`)).toBeNull();
    });

    it(`claims a full page of ${MAX_BATCH} ops in one call`, async () => {
      if (!(await offered())) return;
      const base = ctx.unique('page-full');
      const n = MAX_BATCH - 1;
      for (let i = 0; i < n; i += 500)
        await ctx.store.apply(
          Array.from({ length: Math.min(500, n - i) }, (_, j) => ({
            op: 'put' as const,
            key: `${base}/due/${String(i + j).padStart(4, '0')}`,
            value: 'due',
          })),
        );
      const ops: PageOp[] = Array.from({ length: n }, (_, i) => ({
        op: 'move',
        from: `${base}/due/${String(i).padStart(4, '0')}`,
        to: `${base}/next/${String(i).padStart(4, '0')}`,
        value: `moved ${i}`,
      }));
      ops.push({ op: 'put', key: `${base}/page`, value: 'record' });
      const { lease, results } = await ctx.store.claimPage(
        { key: `${base}/lease`, owner: 'o', leaseMs: 10_000 },
        ops,
      );
      expect(lease).not.toBeNull();
      expect(results.every(Boolean)).toBe(true);
      expect(await ctx.store.count(`${base}/due/`)).toBe(0);
      expect(await ctx.store.count(`${base}/next/`)).toBe(n);
      expect(await ctx.store.get(`${base}/next/0777`)).toBe('moved 777');
    });

    it('gives each item to exactly one of several racing pages', async () => {
      if (!(await offered())) return;
      const base = ctx.unique('page-race');
      const items = 120;
      const stores = [ctx.store, await ctx.open(), await ctx.open()];
      for (let round = 0; round < 3; round++) {
        const at = `${base}/${round}`;
        await ctx.store.apply(
          Array.from({ length: items }, (_, i) => ({
            op: 'put' as const,
            key: `${at}/due/${i}`,
            value: 'due',
          })),
        );
        // Each page asks for the items in its own order (a backend must not deadlock on that).
        const claims = await Promise.all(
          stores.map((store, s) => {
            const order = Array.from({ length: items }, (_, i) =>
              s === 1 ? items - 1 - i : (i * 7 + s) % items,
            );
            const ops: PageOp[] = order.flatMap((i): PageOp[] => [
              { op: 'move', from: `${at}/due/${i}`, to: `${at}/next/${i}`, value: `page ${s}` },
              { op: 'create', key: `${at}/occ/${i}`, value: `page ${s}` },
            ]);
            return store
              .claimPage({ key: `${at}/lease/${s}`, owner: `n${s}`, leaseMs: 10_000 }, ops)
              .then((c) => ({ s, order, c }));
          }),
        );
        const moved = new Map<number, number[]>();
        const created = new Map<number, number[]>();
        for (const { s, order, c } of claims) {
          expect(c.lease).not.toBeNull();
          order.forEach((item, j) => {
            if (c.results[2 * j]) moved.set(item, [...(moved.get(item) ?? []), s]);
            if (c.results[2 * j + 1]) created.set(item, [...(created.get(item) ?? []), s]);
          });
        }
        const values = await ctx.store.getMany(
          Array.from({ length: items }, (_, i) => [`${at}/next/${i}`, `${at}/occ/${i}`]).flat(),
        );
        for (let i = 0; i < items; i++) {
          expect(moved.get(i)?.length, `item ${i} moved by pages ${moved.get(i)}`).toBe(1);
          expect(created.get(i)?.length, `item ${i} created by pages ${created.get(i)}`).toBe(1);
          expect(values[2 * i]).toBe(`page ${moved.get(i)![0]}`);
          expect(values[2 * i + 1]).toBe(`page ${created.get(i)![0]}`);
        }
        expect(await ctx.store.count(`${at}/due/`)).toBe(0);
      }
    });
  });
}
