/**
 * The fault proxy (test/harness/fault-proxy.ts) between oncely and real PostgreSQL, MariaDB and Redis
 * servers from the harness: each fault shows up through the store API as the design expects.
 * `direct` is a second store on the same server, not behind the proxy: it sees what the server
 * really did while the proxied client saw something else.
 *
 * Timing: the box is small and shared, so only lower bounds are tight (a timer never fires
 * early); upper bounds are generous.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/index.js';
import { type ServerBackend, serverBackend, testPrefix } from './harness/backends.js';
import { type FaultProxy, startFaultProxy } from './harness/fault-proxy.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How a call settled, or `pending` if it had not within `ms`. */
async function settledWithin<T>(
  call: Promise<T>,
  ms: number,
): Promise<{ state: 'fulfilled'; value: T } | { state: 'rejected'; error: unknown } | { state: 'pending' }> {
  const timer = sleep(ms).then(() => ({ state: 'pending' as const }));
  return Promise.race([
    call.then(
      (value) => ({ state: 'fulfilled' as const, value }),
      (error: unknown) => ({ state: 'rejected' as const, error }),
    ),
    timer,
  ]);
}

/** Polls `check` until it is true or `ms` passed; returns the last answer. */
async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (performance.now() > deadline) return false;
    await sleep(50);
  }
}

/**
 * Redis (its commandTimeout) and PostgreSQL (pg's query_timeout on openStore's own pool) bound every
 * call by connectTimeoutMs; the MySQL/MariaDB pool does not.
 */
const CLIENT_TIMEOUT_MS = 1_500;

for (const backend of ['postgres', 'redis', 'mysql'] as const satisfies readonly ServerBackend[]) {
  const target = serverBackend(backend);

  describe.skipIf(target.skip)(`fault proxy in front of ${backend}`, () => {
    const prefix = testPrefix(`fp_${backend}`);
    let proxy: FaultProxy;
    let direct: Store;
    let through: Store;

    beforeAll(async () => {
      proxy = await startFaultProxy(target.url!);
      direct = await openStore(target.url!, { prefix });
      through = await openStore(proxy.url, { prefix, connectTimeoutMs: CLIENT_TIMEOUT_MS });
    });
    afterAll(async () => {
      await through?.close().catch(() => {});
      await direct?.close();
      await proxy?.close();
    });

    it('forwards to the server and counts its open connections', async () => {
      const own = await startFaultProxy(target.url!);
      try {
        expect(own.url).not.toBe(target.url);
        expect(own.connections()).toBe(0);
        const other = await openStore(own.url, { prefix });
        expect(await other.acquire([{ key: 'count', owner: 'via-proxy', leaseMs: 5_000 }])).not.toEqual([
          null,
        ]);
        // The lease taken through the proxy is on the server.
        expect((await direct.inspect('count'))?.owner).toBe('via-proxy');
        expect(own.connections()).toBeGreaterThanOrEqual(1);
        await other.close();
        await own.waitForConnections(0);
      } finally {
        await own.close();
      }
    });

    it('delay(ms) adds at least 2 × ms to a round trip (both ways), and delay(0) removes it', async () => {
      await through.now();
      proxy.delay(250);
      try {
        const started = performance.now();
        await through.now();
        expect(performance.now() - started).toBeGreaterThanOrEqual(499);
      } finally {
        proxy.delay(0);
      }
      const started = performance.now();
      await through.now();
      expect(performance.now() - started).toBeLessThan(250);
    });

    it('dropReplies: the client sees a failure while the lease IS granted on the server', async () => {
      const key = 'lost-reply';
      await through.acquire([{ key: 'warm-up', owner: 'warm', leaseMs: 1_000 }]);
      // The key's last lease has expired, as a job's has between fire times, and this connection
      // has taken it before. (MySQL/MariaDB takes a key it has never seen in two round trips — a
      // re-grant statement that finds no row, then the acquire script — and mysql2 prepares the
      // re-grant statement on its first use: a reply lost there is lost before anything was granted.)
      for (let i = 0; i < 2; i++) {
        expect(await through.acquire([{ key, owner: 'earlier', leaseMs: 1 }])).not.toEqual([null]);
        await sleep(20);
      }
      proxy.dropReplies(true);
      const call = through.acquire([{ key, owner: 'unheard', leaseMs: 30_000 }]);
      call.catch(() => {});
      try {
        // The server granted it: the grant is visible to everyone else.
        expect(await eventually(async () => (await direct.inspect(key))?.owner === 'unheard', 5_000)).toBe(
          true,
        );
        // The client's command / query timeout ends the call (openStore's own pool or client on
        // every backend: ioredis' commandTimeout, pg's query_timeout, oncely's bounded mysql2 pool).
        const outcome = await settledWithin(call, CLIENT_TIMEOUT_MS + 5_000);
        expect(outcome).toMatchObject({ state: 'rejected', error: { code: 'STORE_UNAVAILABLE' } });
      } finally {
        proxy.dropReplies(false);
        // A lost reply leaves the byte stream out of step (a real one ends with the connection).
        proxy.resetAll();
      }
      await expect(call).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      // Whatever the client believes, the lease is held until it expires: nobody else gets it.
      expect(await direct.acquire([{ key, owner: 'other', leaseMs: 1_000 }])).toEqual([null]);
      expect(
        await eventually(
          async () =>
            (await through.acquire([{ key, owner: 'x', leaseMs: 1_000 }]).catch(() => [undefined]))[0] ===
            null,
          10_000,
        ),
      ).toBe(true);
    });

    it('stall: a call hangs until unstalled, or until the client’s own timeout', async () => {
      await through.now();
      proxy.stall(true);
      const started = performance.now();
      const call = through.now();
      call.catch(() => {});
      try {
        const outcome = await settledWithin(call, CLIENT_TIMEOUT_MS + 5_000);
        expect(outcome).toMatchObject({ state: 'rejected', error: { code: 'STORE_UNAVAILABLE' } });
        expect(performance.now() - started).toBeGreaterThanOrEqual(CLIENT_TIMEOUT_MS - 1);
        expect(proxy.connections()).toBeGreaterThanOrEqual(1);
      } finally {
        proxy.stall(false);
      }
      // Held bytes are delivered in order on unstall: the connection is usable again.
      expect(typeof (await through.now())).toBe('number');
    });

    it('resetAll: the in-flight call fails with STORE_UNAVAILABLE, the next one reconnects', async () => {
      await through.now();
      proxy.stall(true);
      const call = through.acquire([{ key: 'in-flight', owner: 'reset', leaseMs: 5_000 }]);
      call.catch(() => {});
      await sleep(200);
      proxy.resetAll();
      proxy.stall(false);
      const outcome = await settledWithin(call, 10_000);
      expect(outcome).toMatchObject({ state: 'rejected', error: { code: 'STORE_UNAVAILABLE' } });
      // The stalled request never reached the server.
      expect(await direct.inspect('in-flight')).toBeNull();
      expect(
        await eventually(async () => typeof (await through.now().catch(() => null)) === 'number', 10_000),
      ).toBe(true);
    });

    it('refuse: new connections fail with STORE_UNAVAILABLE until it is lifted', async () => {
      proxy.refuse(true);
      try {
        proxy.resetAll();
        await expect(openStore(proxy.url, { prefix, connectTimeoutMs: 5_000 })).rejects.toMatchObject({
          code: 'STORE_UNAVAILABLE',
        });
        await expect(through.now()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
        expect(proxy.connections()).toBe(0);
      } finally {
        proxy.refuse(false);
      }
      expect(
        await eventually(async () => typeof (await through.now().catch(() => null)) === 'number', 10_000),
      ).toBe(true);
    });
  });
}

describe.skipIf(serverBackend('redis').skip)('fault proxy: Redis specifics', () => {
  it('a write that timed out is not sent again after a reconnect (no stale write later)', async () => {
    const url = serverBackend('redis').url!;
    const proxy = await startFaultProxy(url);
    const prefix = testPrefix('fp_stale');
    const direct = await openStore(url, { prefix });
    const through = await openStore(proxy.url, { prefix, connectTimeoutMs: CLIENT_TIMEOUT_MS });
    try {
      proxy.stall(true);
      await expect(through.put('k', 'old')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      // The caller was told the write failed; another node writes the newer value.
      await direct.put('k', 'new');
      proxy.resetAll();
      proxy.stall(false);
      expect(
        await eventually(async () => typeof (await through.now().catch(() => null)) === 'number', 10_000),
      ).toBe(true);
      await sleep(200);
      expect(await direct.get('k')).toBe('new');
    } finally {
      await through.close();
      await direct.close();
      await proxy.close();
    }
  });

  it('stalls one connection while another through the same proxy keeps working', async () => {
    const url = serverBackend('redis').url!;
    const proxy = await startFaultProxy(url);
    const prefix = testPrefix('fp_conn');
    const first = await openStore(proxy.url, { prefix, connectTimeoutMs: CLIENT_TIMEOUT_MS });
    const second = await openStore(proxy.url, { prefix, connectTimeoutMs: CLIENT_TIMEOUT_MS });
    try {
      // One ioredis connection per store, in the order the stores were opened.
      await proxy.waitForConnections(2);
      const [a] = proxy.live();
      a!.stall(true);
      const stalled = first.now();
      stalled.catch(() => {});
      expect(typeof (await second.now())).toBe('number');
      expect((await settledWithin(stalled, 500)).state).toBe('pending');
      a!.stall(false);
      expect(typeof (await stalled)).toBe('number');
    } finally {
      await first.close();
      await second.close();
      await proxy.close();
    }
  });
});
