import { describe, expect, it, vi } from 'vitest';
import { randomId } from '../core/ids.js';
import type { Lock } from '../lock/types.js';
import { LOCK_KEY_PREFIX } from '../lock/validate.js';
import { withLock } from '../lock/with-lock.js';
import { expectOddDataStored, ODD_STRINGS } from './odd-data.js';
import { expectCode, type SuiteContext, sleep } from './suite-context.js';

/**
 * Conformance: `tryLock` and the `Lock` handle, as a ShedLock provider behaves — one holder per
 * name (not reentrant), lease times on the store clock, lockAtMostFor/lockAtLeastFor, extend and
 * release fenced by the token (a stale holder can touch nothing), strictly increasing tokens even
 * after cleanup, exactly one winner of a race, odd names as data, bad input refused.
 */
export function describeLocks(ctx: SuiteContext): void {
  describe('locks (ShedLock provider behaviour)', () => {
    it('locks, with lease times on the store clock', async () => {
      const before = await ctx.store.now();
      const lock = await ctx.store.tryLock({
        name: ctx.unique('lock'),
        lockAtMostFor: '10s',
        owner: 'node-a',
      });
      const after = await ctx.store.now();
      expect(lock).not.toBeNull();
      expect(lock!.owner).toBe('node-a');
      expect(Number.isSafeInteger(lock!.token)).toBe(true);
      expect(lock!.lockedAt.getTime()).toBeGreaterThanOrEqual(before);
      expect(lock!.lockedAt.getTime()).toBeLessThanOrEqual(after);
      expect(lock!.lockedUntil.getTime() - lock!.lockedAt.getTime()).toBe(10_000);
      expect(await lock!.release()).toBe(true);
    });

    it('refuses a second attempt while held, also to the same owner (not reentrant)', async () => {
      const name = ctx.unique('second');
      const other = await ctx.open();
      const first = await ctx.store.tryLock({ name, lockAtMostFor: '10s', owner: 'same' });
      expect(first).not.toBeNull();
      expect(await ctx.store.tryLock({ name, lockAtMostFor: '10s', owner: 'same' })).toBeNull();
      expect(await other.tryLock({ name, lockAtMostFor: '10s', owner: 'other' })).toBeNull();
      await first!.release();
    });

    it('keeps different names independent', async () => {
      const a = await ctx.store.tryLock({ name: ctx.unique('a'), lockAtMostFor: '10s' });
      const b = await ctx.store.tryLock({ name: ctx.unique('b'), lockAtMostFor: '10s' });
      expect(a).not.toBeNull();
      expect(b).not.toBeNull();
      await Promise.all([a!.release(), b!.release()]);
    });

    it('relocks after release, with a higher token', async () => {
      const name = ctx.unique('relock');
      const first = await ctx.store.tryLock({ name, lockAtMostFor: '10s' });
      expect(await first!.release()).toBe(true);
      expect(await first!.release()).toBe(false);
      const second = await (await ctx.open()).tryLock({ name, lockAtMostFor: '10s' });
      expect(second).not.toBeNull();
      expect(second!.token).toBeGreaterThan(first!.token);
      await second!.release();
    });

    it('frees the lock once lockAtMostFor has passed (a dead holder never blocks forever)', async () => {
      const name = ctx.unique('timeout');
      const first = await ctx.store.tryLock({ name, lockAtMostFor: 300 });
      expect(first).not.toBeNull();
      expect(await ctx.store.tryLock({ name, lockAtMostFor: 300 })).toBeNull();
      await sleep(450);
      const second = await (await ctx.open()).tryLock({ name, lockAtMostFor: '10s' });
      expect(second).not.toBeNull();
      expect(second!.token).toBeGreaterThan(first!.token);
      await second!.release();
    });

    it('honours lockAtLeastFor after an early release', async () => {
      const name = ctx.unique('atleast');
      const lock = await ctx.store.tryLock({ name, lockAtMostFor: '10s', lockAtLeastFor: 500 });
      expect(await lock!.release()).toBe(true);
      expect(await ctx.store.tryLock({ name, lockAtMostFor: '10s' })).toBeNull();
      const held = await ctx.store.inspect(LOCK_KEY_PREFIX + name);
      expect(held?.expiresAt).toBe(lock!.lockedAt.getTime() + 500);
      await sleep(650);
      const next = await ctx.store.tryLock({ name, lockAtMostFor: '10s' });
      expect(next).not.toBeNull();
      await next!.release();
    });

    it('releases at once when lockAtLeastFor has already passed', async () => {
      const name = ctx.unique('atleast-passed');
      const lock = await ctx.store.tryLock({ name, lockAtMostFor: '10s', lockAtLeastFor: 100 });
      await sleep(200);
      await lock!.release();
      const next = await ctx.store.tryLock({ name, lockAtMostFor: '10s' });
      expect(next).not.toBeNull();
      await next!.release();
    });

    it('extends a held lock, counted from now on the store clock', async () => {
      const name = ctx.unique('extend');
      const lock = await ctx.store.tryLock({ name, lockAtMostFor: 400 });
      const before = await ctx.store.now();
      expect(await lock!.extend('10s')).toBe(true);
      expect(lock!.lockedUntil.getTime()).toBeGreaterThanOrEqual(before + 10_000);
      await sleep(600);
      expect(await ctx.store.tryLock({ name, lockAtMostFor: 1000 })).toBeNull();
      await lock!.release();
    });

    it('never shortens a lock: extend(1s) on a 10-minute lock keeps the 10 minutes', async () => {
      const name = ctx.unique('extend-shorter');
      const lock = await ctx.store.tryLock({ name, lockAtMostFor: '10m' });
      const until = lock!.lockedUntil.getTime();
      const deadline = lock!.localDeadline;
      expect(await lock!.extend('1s')).toBe(true);
      expect(lock!.lockedUntil.getTime()).toBe(until);
      expect(lock!.localDeadline).toBe(deadline); // the keep-alive's abort point does not move in
      expect((await ctx.store.inspect(LOCK_KEY_PREFIX + name))?.expiresAt).toBe(until);
      await lock!.release();
    });

    it('refuses to extend an expired lock, even if nobody took it over', async () => {
      const lock = await ctx.store.tryLock({ name: ctx.unique('extend-expired'), lockAtMostFor: 200 });
      await sleep(350);
      expect(await lock!.extend('10s')).toBe(false);
      expect(lock!.released).toBe(true);
    });

    it('refuses to extend a released lock', async () => {
      const lock = await ctx.store.tryLock({ name: ctx.unique('extend-released'), lockAtMostFor: '10s' });
      await lock!.release();
      expect(await lock!.extend('10s')).toBe(false);
    });

    it('does not let a stale holder extend or release the new holder’s lock', async () => {
      const name = ctx.unique('stale');
      const key = LOCK_KEY_PREFIX + name;
      const stale = await ctx.store.tryLock({ name, lockAtMostFor: 200 });
      await sleep(350);
      const current = await (await ctx.open()).tryLock({ name, lockAtMostFor: '10s' });
      expect(current).not.toBeNull();
      // The store itself refuses the old token, whatever the Lock object believes.
      expect(await ctx.store.extend(key, stale!.token, 60_000)).toBeNull();
      expect(await ctx.store.release(key, stale!.token)).toBe(false);
      expect(await stale!.release()).toBe(false);
      expect((await ctx.store.inspect(key))?.token).toBe(current!.token);
      expect(await ctx.store.tryLock({ name, lockAtMostFor: 1000 })).toBeNull();
      await current!.release();
    });

    it('releases through Symbol.asyncDispose', async () => {
      const name = ctx.unique('dispose');
      {
        const lock = await ctx.store.tryLock({ name, lockAtMostFor: '10s' });
        await lock![Symbol.asyncDispose]();
      }
      const again = await ctx.store.tryLock({ name, lockAtMostFor: '10s' });
      expect(again).not.toBeNull();
      await again!.release();
    });

    it('grants exactly one of 16 racing instances', async () => {
      const name = ctx.unique('race');
      const stores = await Promise.all(Array.from({ length: 16 }, () => ctx.open()));
      const results = await Promise.all(
        stores.map((s, i) => s.tryLock({ name, lockAtMostFor: '10s', owner: `racer-${i}` })),
      );
      const winners = results.filter((l): l is Lock => l !== null);
      expect(winners).toHaveLength(1);
      await winners[0]!.release();
    });

    it('passes the fuzz test: 8 workers, 2 locks, exact counts', async () => {
      const workers = 8;
      const rounds = 6;
      const names = [ctx.unique('fuzz-a'), ctx.unique('fuzz-b')];
      const counters = new Map(names.map((n) => [n, 0]));
      const stores = await Promise.all(Array.from({ length: workers }, () => ctx.open()));
      await Promise.all(
        stores.map(async (s, w) => {
          for (let round = 0; round < rounds; round++) {
            for (const name of names) {
              for (;;) {
                const r = await withLock(s, { name, lockAtMostFor: '10s', owner: `w${w}` }, async () => {
                  // Read-modify-write with a gap: only mutual exclusion keeps the count exact.
                  const seen = counters.get(name)!;
                  await sleep(1);
                  counters.set(name, seen + 1);
                });
                if (r.ran) break;
                await sleep(2 + Math.random() * 5);
              }
            }
          }
        }),
      );
      for (const name of names) expect(counters.get(name)).toBe(workers * rounds);
    }, 60_000);

    it('issues strictly increasing fencing tokens across instances, even after cleanup', async () => {
      const name = ctx.unique('fence');
      const key = LOCK_KEY_PREFIX + name;
      const stores = await Promise.all(Array.from({ length: 4 }, () => ctx.open()));
      const tokens: number[] = [];
      for (let i = 0; i < 12; i++) {
        const lock = await stores[i % stores.length]!.tryLock({ name, lockAtMostFor: '10s' });
        tokens.push(lock!.token);
        await lock!.release();
        if (i % 4 === 3) {
          // Let the key's row expire and be swept, then take it again.
          const short = await ctx.store.tryLock({ name, lockAtMostFor: 50 });
          tokens.push(short!.token);
          await sleep(120);
          await ctx.store.sweep({ limit: 10_000 });
          expect(await ctx.store.inspect(key)).toBeNull();
        }
      }
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]!).toBeGreaterThan(tokens[i - 1]!);
    });

    it('judges leases by the store clock, not the caller’s Date.now()', async () => {
      const name = ctx.unique('clock');
      const spy = vi
        .spyOn(Date, 'now')
        .mockImplementation(() => performance.timeOrigin + performance.now() + 3_600_000);
      try {
        const fast = await ctx.store.tryLock({ name, lockAtMostFor: '10s' });
        expect(fast).not.toBeNull();
        expect(fast!.lockedUntil.getTime() - fast!.lockedAt.getTime()).toBe(10_000);
        const storeNow = await ctx.store.now();
        expect(Math.abs(fast!.lockedAt.getTime() - storeNow)).toBeLessThan(30_000);
        spy.mockImplementation(() => performance.timeOrigin + performance.now() - 3_600_000);
        expect(await (await ctx.open()).tryLock({ name, lockAtMostFor: '10s' })).toBeNull();
        expect(await fast!.extend('10s')).toBe(true);
        await fast!.release();
        spy.mockImplementation(() => performance.timeOrigin + performance.now() + 7_200_000);
        const short = await ctx.store.tryLock({ name, lockAtMostFor: '5s' });
        expect(short).not.toBeNull();
        expect(await ctx.store.tryLock({ name, lockAtMostFor: '5s' })).toBeNull();
        await short!.release();
      } finally {
        spy.mockRestore();
      }
    });

    it('stores odd names as data', async () => {
      const locks = [];
      for (const raw of ODD_STRINGS) {
        const name = raw + randomId(3);
        const lock = await ctx.store.tryLock({ name: name.slice(0, 255), lockAtMostFor: '10s' });
        expect(lock, `lock ${JSON.stringify(name)}`).not.toBeNull();
        expect(lock!.name).toBe(name.slice(0, 255));
        locks.push(lock!);
      }
      for (const lock of locks) {
        const held = await ctx.store.inspect(LOCK_KEY_PREFIX + lock.name);
        expect(held?.token).toBe(lock.token);
        expect(await ctx.store.tryLock({ name: lock.name, lockAtMostFor: '10s' })).toBeNull();
      }
      // LIKE/GLOB metacharacters in a prefix match literally.
      const listed = await ctx.store.listLeases({ prefix: `${LOCK_KEY_PREFIX}100%`, limit: 100 });
      expect(listed.every((l) => l.key.startsWith(`${LOCK_KEY_PREFIX}100%`))).toBe(true);
      expect(listed.map((l) => l.key).sort()).toEqual(
        locks
          .filter((l) => l.name.startsWith('100%'))
          .map((l) => LOCK_KEY_PREFIX + l.name)
          .sort(),
      );
      await Promise.all(locks.map((l) => l.release()));
    });

    it('stores odd keys, values, owners and prefixes as data, byte for byte', async () => {
      await expectOddDataStored(ctx.store, ctx.unique('odd'));
    });

    it('rejects bad input with INVALID_ARGUMENT', async () => {
      const bad: unknown[] = [
        { name: '', lockAtMostFor: 1000 },
        { name: 'x'.repeat(256), lockAtMostFor: 1000 },
        { name: 'n', lockAtMostFor: 0 },
        { name: 'n', lockAtMostFor: -5 },
        { name: 'n', lockAtMostFor: 'soon' },
        { name: 'n', lockAtMostFor: '5 parsecs' },
        { name: 'n', lockAtMostFor: Number.NaN },
        { name: 'n' },
        { name: 'n', lockAtMostFor: '1s', lockAtLeastFor: '2s' },
        { name: 'n', lockAtMostFor: '1s', lockAtLeastFor: 'later' },
        { name: 'n', lockAtMostFor: '1s', lockAtMostFr: '1s' },
        { name: 42, lockAtMostFor: '1s' },
        { name: 'lone \ud800 surrogate', lockAtMostFor: '1s' },
      ];
      for (const options of bad) {
        await expectCode(ctx.store.tryLock(options as never), 'INVALID_ARGUMENT');
      }
      const lock = await ctx.store.tryLock({ name: ctx.unique('bad-extend'), lockAtMostFor: '1s' });
      await expectCode(lock!.extend(0), 'INVALID_ARGUMENT');
      await expectCode(lock!.extend('1s', '2s'), 'INVALID_ARGUMENT');
      await lock!.release();
    });
  });
}
