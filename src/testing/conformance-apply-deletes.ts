import { describe, expect, it } from 'vitest';
import type { WriteOp } from '../store/types.js';
import { type SuiteContext, sleep } from './suite-context.js';

/**
 * Conformance: `apply` with many deletes of distinct keys in one batch — what an engine may send
 * as one statement for a run of them (MariaDB's DELETE … RETURNING) must still answer each op on
 * its own: matched, mismatched, expired, absent, plain and compare-and-delete side by side.
 */
export function describeApplyDeletes(ctx: SuiteContext): void {
  describe('apply (many deletes in one batch)', () => {
    it('answers each of many deletes of distinct keys on its own', async () => {
      const base = ctx.unique('apply-dels');
      const key = (i: number) => `${base}/${String(i).padStart(2, '0')}`;
      // Per key i (0..29): a live record 'v<i>' (i % 5 != 4), one that expires (i % 5 == 4,
      // ttl 150 ms) or none (i % 7 == 6).
      const puts: WriteOp[] = [];
      for (let i = 0; i < 30; i++) {
        if (i % 7 === 6) continue;
        puts.push({ op: 'put', key: key(i), value: `v${i} ✓`, ...(i % 5 === 4 && { ttlMs: 150 }) });
      }
      await ctx.store.apply(puts);
      await sleep(300);
      // The ops in an order of their own (not key order), kinds mixed: plain deletes for i % 3 == 0,
      // compare-and-deletes with the right value for i % 3 == 1, a near miss for i % 3 == 2.
      const ops: WriteOp[] = [];
      const expected: boolean[] = [];
      for (const i of Array.from({ length: 30 }, (_, n) => (n * 7) % 30)) {
        const live = i % 7 !== 6 && i % 5 !== 4;
        if (i % 3 === 0) ops.push({ op: 'delete', key: key(i) });
        else ops.push({ op: 'delete', key: key(i), ifValue: i % 3 === 1 ? `v${i} ✓` : `v${i} ✓ ` });
        expected.push(live && i % 3 !== 2);
      }
      ops.push({ op: 'put', key: `${base}/after`, value: 'x' });
      expected.push(true);
      expect(await ctx.store.apply(ops)).toEqual(expected);
      const left = await ctx.store.getMany(Array.from({ length: 30 }, (_, i) => key(i)));
      expect(left).toEqual(
        Array.from({ length: 30 }, (_, i) => (i % 7 !== 6 && i % 5 !== 4 && i % 3 === 2 ? `v${i} ✓` : null)),
      );
      // The same batch again: everything is gone but the near misses' records.
      expect(await ctx.store.apply(ops.slice(0, -1))).toEqual(ops.slice(0, -1).map(() => false));
    });
  });
}
