import { describe, expect, it } from 'vitest';
import { expectCode, type StoreFactory, type SuiteContext } from './suite-context.js';

/**
 * Conformance: the store clock (epoch ms, monotonic enough, near the host's), capabilities stated
 * as data, idempotent concurrent migration, and CLOSED for every call after `close()`.
 * `factory` opens a store the suite does not track, for the test that closes it itself.
 */
export function describeMetadata(ctx: SuiteContext, factory: StoreFactory): void {
  describe('clock and metadata', () => {
    it('reads the store clock as epoch ms close to the host clock', async () => {
      const now = await ctx.store.now();
      expect(Number.isSafeInteger(now)).toBe(true);
      expect(Math.abs(now - Date.now())).toBeLessThan(60_000);
      const later = await ctx.store.now();
      expect(later).toBeGreaterThanOrEqual(now);
    });

    it('states its capabilities as data', () => {
      const c = ctx.store.capabilities;
      expect(typeof ctx.store.kind).toBe('string');
      expect(c.fencing).toBe(true);
      expect(['memory', 'disk', 'server']).toContain(c.durability);
      for (const flag of [
        'serverTime',
        'multiProcess',
        'multiHost',
        'batchAcquire',
        'batchApply',
        'batchGet',
        'serverCount',
        'pages',
      ] as const) {
        expect(typeof c[flag]).toBe('boolean');
      }
    });

    it('migrates idempotently, also concurrently', async () => {
      const other = await ctx.open();
      await Promise.all([ctx.store.migrate(), other.migrate(), ctx.store.migrate()]);
      await expect(other.now()).resolves.toBeTypeOf('number');
    });

    it('refuses calls after close() with CLOSED', async () => {
      const s = await factory();
      await s.close();
      await s.close(); // idempotent
      await expectCode(s.now(), 'CLOSED');
      await expectCode(s.tryLock({ name: ctx.unique('closed'), lockAtMostFor: 1000 }), 'CLOSED');
      await expectCode(s.apply([{ op: 'delete', key: ctx.unique('closed') }]), 'CLOSED');
    });
  });
}
