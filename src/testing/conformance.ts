import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OncelyError } from '../core/errors.js';
import { randomId } from '../core/ids.js';
import type { Lock } from '../lock/types.js';
import { LOCK_KEY_PREFIX } from '../lock/validate.js';
import { withLock } from '../lock/with-lock.js';
import type { Store } from '../store/types.js';
import { describeApply } from './conformance-apply.js';
import { describeReads } from './conformance-reads.js';
import { expectOddDataStored, ODD_STRINGS } from './odd-data.js';
import { expectCode, type SuiteContext, sleep, storeTimeAt } from './suite-context.js';

/** Opens a new store instance (its own connections) on the backing storage under test. */
export type StoreFactory = () => Promise<Store>;

export interface DescribeStoreOptions {
  /** Skip the whole suite with this reason (e.g. the server could not be started outside CI). */
  skip?: string | undefined;
}

/**
 * The behaviour every oncely store must show, run against a real backend. Third-party stores can
 * certify themselves with it (vitest):
 *
 * @example
 * import { describeStore } from 'oncely/testing';
 * describeStore('my-store', async () => MyStore.open(process.env.MY_URL!));
 */
export function describeStore(name: string, factory: StoreFactory, options: DescribeStoreOptions = {}): void {
  const suite = options.skip ? describe.skip : describe;
  suite(`store conformance: ${name}`, () => {
    const opened: Store[] = [];
    let store: Store;
    const open = async () => {
      const s = await factory();
      opened.push(s);
      return s;
    };
    /** A name no other test (or earlier run on a reused server) uses. */
    const unique = (label: string) => `${label}-${randomId(6)}`;
    const ctx: SuiteContext = {
      get store() {
        return store;
      },
      open,
      unique,
    };

    beforeAll(async () => {
      store = await open();
    });
    afterAll(async () => {
      await Promise.all(opened.map((s) => s.close().catch(() => {})));
    });

    describe('clock and metadata', () => {
      it('reads the store clock as epoch ms close to the host clock', async () => {
        const now = await store.now();
        expect(Number.isSafeInteger(now)).toBe(true);
        expect(Math.abs(now - Date.now())).toBeLessThan(60_000);
        const later = await store.now();
        expect(later).toBeGreaterThanOrEqual(now);
      });

      it('states its capabilities as data', () => {
        const c = store.capabilities;
        expect(typeof store.kind).toBe('string');
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
        ] as const) {
          expect(typeof c[flag]).toBe('boolean');
        }
      });

      it('migrates idempotently, also concurrently', async () => {
        const other = await open();
        await Promise.all([store.migrate(), other.migrate(), store.migrate()]);
        await expect(other.now()).resolves.toBeTypeOf('number');
      });

      it('refuses calls after close() with CLOSED', async () => {
        const s = await factory();
        await s.close();
        await s.close(); // idempotent
        await expectCode(s.now(), 'CLOSED');
        await expectCode(s.tryLock({ name: unique('closed'), lockAtMostFor: 1000 }), 'CLOSED');
        await expectCode(s.apply([{ op: 'delete', key: unique('closed') }]), 'CLOSED');
      });
    });

    describe('locks (ShedLock provider behaviour)', () => {
      it('locks, with lease times on the store clock', async () => {
        const before = await store.now();
        const lock = await store.tryLock({ name: unique('lock'), lockAtMostFor: '10s', owner: 'node-a' });
        const after = await store.now();
        expect(lock).not.toBeNull();
        expect(lock!.owner).toBe('node-a');
        expect(Number.isSafeInteger(lock!.token)).toBe(true);
        expect(lock!.lockedAt.getTime()).toBeGreaterThanOrEqual(before);
        expect(lock!.lockedAt.getTime()).toBeLessThanOrEqual(after);
        expect(lock!.lockedUntil.getTime() - lock!.lockedAt.getTime()).toBe(10_000);
        expect(await lock!.release()).toBe(true);
      });

      it('refuses a second attempt while held, also to the same owner (not reentrant)', async () => {
        const name = unique('second');
        const other = await open();
        const first = await store.tryLock({ name, lockAtMostFor: '10s', owner: 'same' });
        expect(first).not.toBeNull();
        expect(await store.tryLock({ name, lockAtMostFor: '10s', owner: 'same' })).toBeNull();
        expect(await other.tryLock({ name, lockAtMostFor: '10s', owner: 'other' })).toBeNull();
        await first!.release();
      });

      it('keeps different names independent', async () => {
        const a = await store.tryLock({ name: unique('a'), lockAtMostFor: '10s' });
        const b = await store.tryLock({ name: unique('b'), lockAtMostFor: '10s' });
        expect(a).not.toBeNull();
        expect(b).not.toBeNull();
        await Promise.all([a!.release(), b!.release()]);
      });

      it('relocks after release, with a higher token', async () => {
        const name = unique('relock');
        const first = await store.tryLock({ name, lockAtMostFor: '10s' });
        expect(await first!.release()).toBe(true);
        expect(await first!.release()).toBe(false);
        const second = await (await open()).tryLock({ name, lockAtMostFor: '10s' });
        expect(second).not.toBeNull();
        expect(second!.token).toBeGreaterThan(first!.token);
        await second!.release();
      });

      it('frees the lock once lockAtMostFor has passed (a dead holder never blocks forever)', async () => {
        const name = unique('timeout');
        const first = await store.tryLock({ name, lockAtMostFor: 300 });
        expect(first).not.toBeNull();
        expect(await store.tryLock({ name, lockAtMostFor: 300 })).toBeNull();
        await sleep(450);
        const second = await (await open()).tryLock({ name, lockAtMostFor: '10s' });
        expect(second).not.toBeNull();
        expect(second!.token).toBeGreaterThan(first!.token);
        await second!.release();
      });

      it('honours lockAtLeastFor after an early release', async () => {
        const name = unique('atleast');
        const lock = await store.tryLock({ name, lockAtMostFor: '10s', lockAtLeastFor: 500 });
        expect(await lock!.release()).toBe(true);
        expect(await store.tryLock({ name, lockAtMostFor: '10s' })).toBeNull();
        const held = await store.inspect(LOCK_KEY_PREFIX + name);
        expect(held?.expiresAt).toBe(lock!.lockedAt.getTime() + 500);
        await sleep(650);
        const next = await store.tryLock({ name, lockAtMostFor: '10s' });
        expect(next).not.toBeNull();
        await next!.release();
      });

      it('releases at once when lockAtLeastFor has already passed', async () => {
        const name = unique('atleast-passed');
        const lock = await store.tryLock({ name, lockAtMostFor: '10s', lockAtLeastFor: 100 });
        await sleep(200);
        await lock!.release();
        const next = await store.tryLock({ name, lockAtMostFor: '10s' });
        expect(next).not.toBeNull();
        await next!.release();
      });

      it('extends a held lock, counted from now on the store clock', async () => {
        const name = unique('extend');
        const lock = await store.tryLock({ name, lockAtMostFor: 400 });
        const before = await store.now();
        expect(await lock!.extend('10s')).toBe(true);
        expect(lock!.lockedUntil.getTime()).toBeGreaterThanOrEqual(before + 10_000);
        await sleep(600);
        expect(await store.tryLock({ name, lockAtMostFor: 1000 })).toBeNull();
        await lock!.release();
      });

      it('refuses to extend an expired lock, even if nobody took it over', async () => {
        const lock = await store.tryLock({ name: unique('extend-expired'), lockAtMostFor: 200 });
        await sleep(350);
        expect(await lock!.extend('10s')).toBe(false);
        expect(lock!.released).toBe(true);
      });

      it('refuses to extend a released lock', async () => {
        const lock = await store.tryLock({ name: unique('extend-released'), lockAtMostFor: '10s' });
        await lock!.release();
        expect(await lock!.extend('10s')).toBe(false);
      });

      it('does not let a stale holder extend or release the new holder’s lock', async () => {
        const name = unique('stale');
        const key = LOCK_KEY_PREFIX + name;
        const stale = await store.tryLock({ name, lockAtMostFor: 200 });
        await sleep(350);
        const current = await (await open()).tryLock({ name, lockAtMostFor: '10s' });
        expect(current).not.toBeNull();
        // The store itself refuses the old token, whatever the Lock object believes.
        expect(await store.extend(key, stale!.token, 60_000)).toBeNull();
        expect(await store.release(key, stale!.token)).toBe(false);
        expect(await stale!.release()).toBe(false);
        expect((await store.inspect(key))?.token).toBe(current!.token);
        expect(await store.tryLock({ name, lockAtMostFor: 1000 })).toBeNull();
        await current!.release();
      });

      it('releases through Symbol.asyncDispose', async () => {
        const name = unique('dispose');
        {
          const lock = await store.tryLock({ name, lockAtMostFor: '10s' });
          await lock![Symbol.asyncDispose]();
        }
        const again = await store.tryLock({ name, lockAtMostFor: '10s' });
        expect(again).not.toBeNull();
        await again!.release();
      });

      it('grants exactly one of 16 racing instances', async () => {
        const name = unique('race');
        const stores = await Promise.all(Array.from({ length: 16 }, () => open()));
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
        const names = [unique('fuzz-a'), unique('fuzz-b')];
        const counters = new Map(names.map((n) => [n, 0]));
        const stores = await Promise.all(Array.from({ length: workers }, () => open()));
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
        const name = unique('fence');
        const key = LOCK_KEY_PREFIX + name;
        const stores = await Promise.all(Array.from({ length: 4 }, () => open()));
        const tokens: number[] = [];
        for (let i = 0; i < 12; i++) {
          const lock = await stores[i % stores.length]!.tryLock({ name, lockAtMostFor: '10s' });
          tokens.push(lock!.token);
          await lock!.release();
          if (i % 4 === 3) {
            // Let the key's row expire and be swept, then take it again.
            const short = await store.tryLock({ name, lockAtMostFor: 50 });
            tokens.push(short!.token);
            await sleep(120);
            await store.sweep({ limit: 10_000 });
            expect(await store.inspect(key)).toBeNull();
          }
        }
        for (let i = 1; i < tokens.length; i++) expect(tokens[i]!).toBeGreaterThan(tokens[i - 1]!);
      });

      it('judges leases by the store clock, not the caller’s Date.now()', async () => {
        const name = unique('clock');
        const spy = vi
          .spyOn(Date, 'now')
          .mockImplementation(() => performance.timeOrigin + performance.now() + 3_600_000);
        try {
          const fast = await store.tryLock({ name, lockAtMostFor: '10s' });
          expect(fast).not.toBeNull();
          expect(fast!.lockedUntil.getTime() - fast!.lockedAt.getTime()).toBe(10_000);
          const storeNow = await store.now();
          expect(Math.abs(fast!.lockedAt.getTime() - storeNow)).toBeLessThan(30_000);
          spy.mockImplementation(() => performance.timeOrigin + performance.now() - 3_600_000);
          expect(await (await open()).tryLock({ name, lockAtMostFor: '10s' })).toBeNull();
          expect(await fast!.extend('10s')).toBe(true);
          await fast!.release();
          spy.mockImplementation(() => performance.timeOrigin + performance.now() + 7_200_000);
          const short = await store.tryLock({ name, lockAtMostFor: '5s' });
          expect(short).not.toBeNull();
          expect(await store.tryLock({ name, lockAtMostFor: '5s' })).toBeNull();
          await short!.release();
        } finally {
          spy.mockRestore();
        }
      });

      it('stores odd names as data', async () => {
        const locks = [];
        for (const raw of ODD_STRINGS) {
          const name = raw + randomId(3);
          const lock = await store.tryLock({ name: name.slice(0, 255), lockAtMostFor: '10s' });
          expect(lock, `lock ${JSON.stringify(name)}`).not.toBeNull();
          expect(lock!.name).toBe(name.slice(0, 255));
          locks.push(lock!);
        }
        for (const lock of locks) {
          const held = await store.inspect(LOCK_KEY_PREFIX + lock.name);
          expect(held?.token).toBe(lock.token);
          expect(await store.tryLock({ name: lock.name, lockAtMostFor: '10s' })).toBeNull();
        }
        // LIKE/GLOB metacharacters in a prefix match literally.
        const listed = await store.listLeases({ prefix: `${LOCK_KEY_PREFIX}100%`, limit: 100 });
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
        await expectOddDataStored(store, unique('odd'));
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
          await expectCode(store.tryLock(options as never), 'INVALID_ARGUMENT');
        }
        const lock = await store.tryLock({ name: unique('bad-extend'), lockAtMostFor: '1s' });
        await expectCode(lock!.extend(0), 'INVALID_ARGUMENT');
        await expectCode(lock!.extend('1s', '2s'), 'INVALID_ARGUMENT');
        await lock!.release();
      });
    });

    describe('withLock and keep-alive', () => {
      it('runs the callback and returns its value', async () => {
        const r = await withLock(
          store,
          { name: unique('with'), lockAtMostFor: '10s' },
          async (lock) => lock.token,
        );
        expect(r.ran).toBe(true);
        expect(r.ran && typeof r.value).toBe('number');
      });

      it('does not run when the lock is held', async () => {
        const name = unique('with-held');
        const held = await store.tryLock({ name, lockAtMostFor: '10s' });
        const fn = vi.fn();
        expect(await withLock(await open(), { name, lockAtMostFor: '10s' }, fn)).toEqual({ ran: false });
        expect(fn).not.toHaveBeenCalled();
        await held!.release();
      });

      it('releases after a throw and rethrows', async () => {
        const name = unique('with-throw');
        const boom = new Error('boom');
        await expect(
          withLock(store, { name, lockAtMostFor: '10s' }, async () => {
            throw boom;
          }),
        ).rejects.toBe(boom);
        const again = await store.tryLock({ name, lockAtMostFor: '10s' });
        expect(again).not.toBeNull();
        await again!.release();
      });

      it('keeps a short lease alive while the work runs longer than it', async () => {
        const name = unique('keepalive');
        const other = await open();
        let stolen: Lock | null = null;
        const r = await withLock(store, { name, lockAtMostFor: 300 }, async (_lock, signal) => {
          for (let i = 0; i < 8; i++) {
            await sleep(150);
            stolen ??= await other.tryLock({ name, lockAtMostFor: 300 });
          }
          return signal.aborted;
        });
        expect(r).toEqual({ ran: true, value: false });
        expect(stolen).toBeNull();
      });

      it('aborts the signal with LOCK_LOST when the lease is taken away', async () => {
        const name = unique('lost');
        const r = await withLock(store, { name, lockAtMostFor: 400 }, async (lock, signal) => {
          // Simulate an operator (or a bug) force-releasing the lease behind the holder's back.
          await store.release(LOCK_KEY_PREFIX + name, lock.token);
          const thief = await store.tryLock({ name, lockAtMostFor: '10s' });
          expect(thief).not.toBeNull();
          await new Promise<void>((resolve) => {
            if (signal.aborted) resolve();
            signal.addEventListener('abort', () => resolve(), { once: true });
          });
          await thief!.release();
          return signal.reason;
        });
        expect(r.ran && r.value).toBeInstanceOf(OncelyError);
        expect(r.ran && (r.value as OncelyError).code).toBe('LOCK_LOST');
      });

      it('aborts before the lease ends when the store cannot be reached to extend it', async () => {
        const name = unique('unreachable');
        const failing: Store = Object.create(store, {
          extend: {
            value: async () => Promise.reject(new OncelyError('STORE_UNAVAILABLE', 'simulated outage')),
          },
        });
        let abortedAt = 0;
        let lockedUntil = 0;
        const storeTime = await storeTimeAt(store);
        await withLock(failing, { name, lockAtMostFor: 500 }, async (lock, signal) => {
          lockedUntil = lock.lockedUntil.getTime();
          await new Promise<void>((resolve) =>
            signal.addEventListener('abort', () => resolve(), { once: true }),
          );
          abortedAt = storeTime(performance.now());
          expect((signal.reason as OncelyError).code).toBe('LOCK_LOST');
        });
        expect(abortedAt).toBeGreaterThan(0);
        expect(abortedAt).toBeLessThan(lockedUntil);
      });

      it('aborts before the lease ends with keepAlive off', async () => {
        const name = unique('no-keepalive');
        let abortedAt = 0;
        let lockedUntil = 0;
        const storeTime = await storeTimeAt(store);
        await withLock(store, { name, lockAtMostFor: 400, keepAlive: false }, async (lock, signal) => {
          lockedUntil = lock.lockedUntil.getTime();
          await new Promise<void>((resolve) =>
            signal.addEventListener('abort', () => resolve(), { once: true }),
          );
          abortedAt = storeTime(performance.now());
        });
        expect(abortedAt).toBeLessThan(lockedUntil);
      });
    });

    describe('leases (Store SPI)', () => {
      it('acquires a batch in one call, granting only free keys', async () => {
        const base = unique('batch');
        const held = await store.acquire([{ key: `${base}/1`, owner: 'x', leaseMs: 10_000 }]);
        expect(held[0]).not.toBeNull();
        const requests = Array.from({ length: 50 }, (_, i) => ({
          key: `${base}/${i}`,
          owner: 'y',
          leaseMs: 10_000,
        }));
        requests.push({ key: `${base}/2`, owner: 'y', leaseMs: 10_000 }); // repeated key
        const granted = await (await open()).acquire(requests);
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
        expect(await store.acquire([])).toEqual([]);
      });

      it('lists unexpired leases by prefix in key order', async () => {
        const base = unique('list');
        await store.acquire([
          { key: `${base}/b`, owner: 'o', leaseMs: 10_000 },
          { key: `${base}/a`, owner: 'o', leaseMs: 10_000 },
          { key: `${base}/c`, owner: 'o', leaseMs: 50 },
          { key: `${base}x`, owner: 'o', leaseMs: 10_000 },
        ]);
        await sleep(120);
        const listed = await store.listLeases({ prefix: `${base}/` });
        expect(listed.map((l) => l.key)).toEqual([`${base}/a`, `${base}/b`]);
        expect(await store.listLeases({ prefix: `${base}/`, limit: 1 })).toHaveLength(1);
      });

      it('releases with holdUntil, keeping the key taken until then', async () => {
        const key = unique('hold');
        const [lease] = await store.acquire([{ key, owner: 'o', leaseMs: 10_000 }]);
        const now = await store.now();
        expect(await store.release(key, lease!.token, now + 400)).toBe(true);
        expect((await store.acquire([{ key, owner: 'p', leaseMs: 1000 }]))[0]).toBeNull();
        await sleep(550);
        expect((await store.acquire([{ key, owner: 'p', leaseMs: 1000 }]))[0]).not.toBeNull();
      });

      it('rejects bad SPI input with INVALID_ARGUMENT', async () => {
        await expectCode(store.acquire([{ key: '', owner: 'o', leaseMs: 1 }]), 'INVALID_ARGUMENT');
        await expectCode(store.acquire([{ key: 'k', owner: 'o', leaseMs: 0 }]), 'INVALID_ARGUMENT');
        await expectCode(store.acquire([{ key: 'k', owner: 'o', leaseMs: 1.5 }]), 'INVALID_ARGUMENT');
        await expectCode(
          store.acquire([{ key: 'x'.repeat(513), owner: 'o', leaseMs: 1 }]),
          'INVALID_ARGUMENT',
        );
        await expectCode(store.extend('k', -1, 10), 'INVALID_ARGUMENT');
        await expectCode(store.scan('', { limit: 0 }), 'INVALID_ARGUMENT');
        await expectCode(store.put('k', 42 as never), 'INVALID_ARGUMENT');
        await expectCode(store.put('k\udc00', 'v'), 'INVALID_ARGUMENT');
        await expectCode(store.put('k', 'v\ud800'), 'INVALID_ARGUMENT');
        // NUL: PostgreSQL text cannot hold it, so no store takes it, in a key or a value.
        await expectCode(store.put('k', 'nul \u0000'), 'INVALID_ARGUMENT');
        await expectCode(store.put('k\u0000', 'v'), 'INVALID_ARGUMENT');
        await expectCode(store.acquire([{ key: 'k', owner: 'o\u0000', leaseMs: 1 }]), 'INVALID_ARGUMENT');
        await expectCode(store.scan('p\u0000'), 'INVALID_ARGUMENT');
        await expectCode(store.scan('p', { after: 'p\u0000' }), 'INVALID_ARGUMENT');
        await expectCode(store.listLeases({ prefix: 'p\u0000' }), 'INVALID_ARGUMENT');
      });
    });

    describe('records', () => {
      it('puts, gets, overwrites and deletes', async () => {
        const key = unique('rec');
        expect(await store.get(key)).toBeNull();
        await store.put(key, '{"a":1}');
        expect(await (await open()).get(key)).toBe('{"a":1}');
        await store.put(key, 'second 🚀 \'quoted\' "x"');
        expect(await store.get(key)).toBe('second 🚀 \'quoted\' "x"');
        expect(await store.delete(key)).toBe(true);
        expect(await store.delete(key)).toBe(false);
        expect(await store.get(key)).toBeNull();
      });

      it('stores large values', async () => {
        const key = unique('big');
        const value = 'v'.repeat(200_000);
        await store.put(key, value);
        expect(await store.get(key)).toBe(value);
      });

      it('expires records after their ttl, on the store clock', async () => {
        const key = unique('ttl');
        await store.put(key, 'short', { ttlMs: 150 });
        expect(await store.get(key)).toBe('short');
        await sleep(300);
        expect(await store.get(key)).toBeNull();
        expect(await store.scan(key)).toEqual([]);
        expect(await store.delete(key)).toBe(false);
        await store.put(key, 'again');
        expect(await store.get(key)).toBe('again');
      });

      it('scans by prefix in key order, reversed, with a cursor and a limit', async () => {
        const base = unique('scan');
        const keys = ['a', 'b', 'b2', 'c', 'd%', 'd_', 'é', '🔒'].map((k) => `${base}/${k}`);
        for (const k of [...keys].reverse()) await store.put(k, k.toUpperCase());
        await store.put(`${base}-other`, 'x');
        await store.put(`${base}/gone`, 'x', { ttlMs: 50 });
        await sleep(100);
        const all = await store.scan(`${base}/`);
        expect(all.map((r) => r.key)).toEqual(keys);
        expect(all[0]!.value).toBe(keys[0]!.toUpperCase());
        expect(all[0]!.expiresAt).toBeNull();
        const reversed = await store.scan(`${base}/`, { reverse: true });
        expect(reversed.map((r) => r.key)).toEqual([...keys].reverse());
        const page1 = await store.scan(`${base}/`, { limit: 3 });
        const page2 = await store.scan(`${base}/`, { limit: 3, after: page1.at(-1)!.key });
        expect([...page1, ...page2].map((r) => r.key)).toEqual(keys.slice(0, 6));
        const back = await store.scan(`${base}/`, { reverse: true, limit: 2, after: keys[3]! });
        expect(back.map((r) => r.key)).toEqual([keys[2], keys[1]]);
        const like = await store.scan(`${base}/d%`);
        expect(like.map((r) => r.key)).toEqual([`${base}/d%`]);
        const ttl = await store.scan(`${base}-other`);
        expect(ttl).toHaveLength(1);
      });

      it('reports expiry times in store time', async () => {
        const key = unique('exp');
        const before = await store.now();
        await store.put(key, 'v', { ttlMs: 60_000 });
        const [rec] = await store.scan(key);
        expect(rec!.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
        expect(rec!.expiresAt).toBeLessThan(before + 70_000);
      });
    });

    describeApply(ctx);

    describeReads(ctx);

    describe('sweeping', () => {
      it('deletes expired leases and records in bounded batches', async () => {
        const base = unique('sweep');
        await store.acquire(
          Array.from({ length: 5 }, (_, i) => ({ key: `${base}/l${i}`, owner: 'o', leaseMs: 30 })),
        );
        for (let i = 0; i < 5; i++) await store.put(`${base}/r${i}`, 'v', { ttlMs: 30 });
        await store.put(`${base}/keep`, 'v');
        const [live] = await store.acquire([{ key: `${base}/live`, owner: 'o', leaseMs: 60_000 }]);
        await sleep(100);
        // Other tests may have left expired rows too: sweep until nothing is left, in small batches.
        let first = await store.sweep({ limit: 2 });
        expect(first.leases).toBeLessThanOrEqual(2);
        expect(first.records).toBeLessThanOrEqual(2);
        for (let i = 0; i < 10_000 && (first.leases > 0 || first.records > 0); i++)
          first = await store.sweep({ limit: 500 });
        expect(await store.get(`${base}/keep`)).toBe('v');
        expect((await store.inspect(`${base}/live`))?.token).toBe(live!.token);
        expect(await store.scan(`${base}/r`)).toEqual([]);
      });
    });
  });
}
