import { type AddressInfo, createServer, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OncelyError, openStore } from '../src/index.js';
import { RedisStore } from '../src/store/redis.js';
import { describeStore } from '../src/testing/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { startRedis } from './harness/servers.js';

const target = serverBackend('redis');
const prefix = testPrefix('redis');

describeStore('redis', () => openStore(target.url!, { prefix }), { skip: target.skip });

const suite = target.skip ? describe.skip : describe;

async function openError(url: string, options: { connectTimeoutMs?: number } = {}): Promise<OncelyError> {
  try {
    const store = await openStore(url, { prefix, ...options });
    await store.close();
  } catch (err) {
    expect(err).toBeInstanceOf(OncelyError);
    return err as OncelyError;
  }
  throw new Error(`openStore(${url}) succeeded`);
}

/** Deletes every key under one store's hash tag, as FLUSHDB would, without touching other tests' keys. */
async function wipe(client: Redis, storePrefix: string): Promise<number> {
  let removed = 0;
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `{${storePrefix}}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) removed += await client.del(...keys);
  } while (cursor !== '0');
  return removed;
}

suite('redis store specifics', () => {
  let client: Redis;

  beforeAll(() => {
    client = new Redis(target.url!, { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    for (const p of [prefix, `${prefix}c`, `${prefix}e`, `${prefix}f`, `${prefix}o`, `${prefix}s`])
      await wipe(client, p);
    await client.quit();
  });

  it('works on the caller’s ioredis client and leaves it open on close()', async () => {
    const store = new RedisStore({ client, prefix: `${prefix}c` });
    await store.migrate();
    expect(store.serverVersion).toMatch(/^\d+\.\d+/);
    const lock = await store.tryLock({ name: 'own-client', lockAtMostFor: '10s' });
    expect(lock).not.toBeNull();
    expect(await client.exists(`{${prefix}c}lease:lock:own-client`)).toBe(1);
    expect(await lock!.release()).toBe(true);
    await store.close();
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
  });

  it('honours a keyPrefix on the caller’s client, scripts included', async () => {
    const prefixed = new Redis(target.url!, { keyPrefix: 'app:', maxRetriesPerRequest: 1 });
    try {
      const store = new RedisStore({ client: prefixed, prefix: `${prefix}c` });
      await store.migrate();
      const [lease] = await store.acquire([{ key: 'kp', owner: 'o', leaseMs: 10_000 }]);
      expect(await client.exists(`app:{${prefix}c}lease:kp`)).toBe(1);
      expect((await store.listLeases({ prefix: 'kp' })).map((l) => l.token)).toEqual([lease!.token]);
      expect(await store.release('kp', lease!.token)).toBe(true);
      await store.close();
    } finally {
      await wipe(prefixed, `app:{${prefix}c}`);
      const keys = await client.keys(`app:{${prefix}c}*`);
      if (keys.length > 0) await client.del(...keys);
      await prefixed.quit();
    }
  });

  it('fails openStore with STORE_UNAVAILABLE within 10 s when nothing listens', async () => {
    const started = performance.now();
    const err = await openError('redis://127.0.0.1:1', { connectTimeoutMs: 5_000 });
    expect(err.code).toBe('STORE_UNAVAILABLE');
    expect(err.message).toMatch(/ECONNREFUSED|connect/i);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('fails within connectTimeoutMs when the server accepts but never answers', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const started = performance.now();
      const err = await openError(`redis://127.0.0.1:${port}`, { connectTimeoutMs: 1_000 });
      expect(err.code).toBe('STORE_UNAVAILABLE');
      expect(performance.now() - started).toBeLessThan(3_000);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('never shows the password in errors', async () => {
    const err = await openError('redis://:secret-pw@127.0.0.1:1', { connectTimeoutMs: 2_000 });
    expect(err.code).toBe('STORE_UNAVAILABLE');
    expect(err.message).not.toContain('secret-pw');
    const bad = await openError('redis://:secret-pw@127.0.0.1:1/not-a-db');
    expect(bad.code).toBe('INVALID_ARGUMENT');
    expect(bad.message).not.toContain('secret-pw');
  });

  it('keeps fencing tokens increasing after all of its keys were lost (FLUSHDB, restart without persistence)', async () => {
    const p = `${prefix}f`;
    const store = await openStore(target.url!, { prefix: p });
    try {
      const [first] = await store.acquire([{ key: 'fenced', owner: 'o', leaseMs: 10_000 }]);
      const [second] = await store.acquire([{ key: 'other', owner: 'o', leaseMs: 10_000 }]);
      expect(second!.token).toBeGreaterThan(first!.token);
      // A fresh counter is seeded from the server clock, not 1.
      expect(first!.token).toBeGreaterThan(1_000_000);
      expect(await wipe(client, p)).toBeGreaterThan(0);
      expect(await client.exists(`{${p}}fence`)).toBe(0);
      const [after] = await store.acquire([{ key: 'fenced', owner: 'o', leaseMs: 10_000 }]);
      expect(after!.token).toBeGreaterThan(second!.token);
      const [next] = await store.acquire([{ key: 'fenced2', owner: 'o', leaseMs: 10_000 }]);
      expect(next!.token).toBe(after!.token + 1);
      expect(Number.isSafeInteger(next!.token)).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('never sweeps the fence counter', async () => {
    const p = `${prefix}f`;
    const store = await openStore(target.url!, { prefix: p });
    try {
      await store.acquire([{ key: 'short', owner: 'o', leaseMs: 20 }]);
      await new Promise((r) => setTimeout(r, 60));
      await store.sweep({ limit: 10_000 });
      expect(await client.exists(`{${p}}fence`)).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('stores odd keys and owners as data, in byte order', async () => {
    const p = `${prefix}o`;
    const store = await openStore(target.url!, { prefix: p });
    try {
      const keys = [
        '*?[glob]',
        'it\'s "quoted"',
        '\t tab and\nnewline ',
        '{hash}tag',
        '|pipe|',
        '[bracket',
        '(paren',
        '-',
        '+',
        'emoji 🔒',
        'ünïcödé',
        '中文',
        '\u{10FFFF}max',
      ];
      const granted = await store.acquire(
        keys.map((key) => ({ key, owner: `owner|${key}|\n`, leaseMs: 10_000 })),
      );
      expect(granted.every((g) => g !== null)).toBe(true);
      for (const key of keys) {
        const lease = await store.inspect(key);
        expect(lease?.key).toBe(key);
        expect(lease?.owner).toBe(`owner|${key}|\n`);
      }
      const sorted = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      expect((await store.listLeases({ limit: 100 })).map((l) => l.key)).toEqual(sorted);
      expect((await store.listLeases({ prefix: '[' })).map((l) => l.key)).toEqual(['[bracket']);
      expect((await store.listLeases({ prefix: '(' })).map((l) => l.key)).toEqual(['(paren']);
      expect((await store.listLeases({ prefix: '-' })).map((l) => l.key)).toEqual(['-']);
      for (const key of keys) await store.put(key, `value of ${key}`);
      expect((await store.scan('')).map((r) => r.key)).toEqual(sorted);
      expect((await store.scan('', { reverse: true })).map((r) => r.key)).toEqual([...sorted].reverse());
      expect((await store.scan('+')).map((r) => r.value)).toEqual(['value of +']);
      expect(await store.get('{hash}tag')).toBe('value of {hash}tag');
    } finally {
      await store.close();
    }
  });

  it('skips expired and vanished entries while still filling the page', async () => {
    const p = `${prefix}o`;
    const store = await openStore(target.url!, { prefix: p });
    try {
      for (let i = 0; i < 10; i++) await store.put(`page/${i}`, 'short', { ttlMs: 20 });
      await store.put('page/9z', 'live');
      await store.put('page/a', 'live');
      await client.del(`{${p}}rec:page/a`); // vanished behind the index's back
      await store.put('page/b', 'live');
      await new Promise((r) => setTimeout(r, 60));
      expect((await store.scan('page/', { limit: 2 })).map((r) => r.key)).toEqual(['page/9z', 'page/b']);
      // The dead entries were removed on the way.
      expect(await client.zrangebylex(`{${p}}recs`, '[page/', '(page0')).toEqual(['page/9z', 'page/b']);
    } finally {
      await store.close();
    }
  });

  it('reports expiresAt in store time and survives a script cache flush', async () => {
    const store = new RedisStore({ client, prefix: `${prefix}c` });
    await store.migrate();
    await client.script('FLUSH');
    const before = await store.now();
    const [lease] = await store.acquire([{ key: 'after-flush', owner: 'o', leaseMs: 5_000 }]);
    expect(lease!.acquiredAt).toBeGreaterThanOrEqual(before);
    expect(lease!.expiresAt).toBe(lease!.acquiredAt + 5_000);
    const extended = await store.extend('after-flush', lease!.token, 8_000);
    expect(extended).toBeGreaterThanOrEqual(lease!.acquiredAt + 8_000);
    expect((await store.inspect('after-flush'))?.expiresAt).toBe(extended);
    expect(await store.release('after-flush', lease!.token)).toBe(true);
    await store.close();
  });

  it('judges expiry by its own comparison with TIME, not only by Redis key expiry', async () => {
    const p = `${prefix}c`;
    const store = new RedisStore({ client, prefix: p });
    const past = (await store.now()) - 1;
    // A lease whose expiry passed but whose key Redis has not dropped (no PXAT here).
    await client.set(`{${p}}lease:stale`, `${past}|5|${past - 1000}|ghost`);
    await client.zadd(`{${p}}leases`, 0, 'stale');
    await client.zadd(`{${p}}lease-exp`, past, 'stale');
    expect(await store.inspect('stale')).toBeNull();
    expect(await store.extend('stale', 5, 1000)).toBeNull();
    expect(await store.release('stale', 5)).toBe(false);
    expect(await store.listLeases({ prefix: 'stale' })).toEqual([]);
    const [lease] = await store.acquire([{ key: 'stale', owner: 'new', leaseMs: 5_000 }]);
    expect(lease!.token).toBeGreaterThan(5);
    expect((await store.listLeases({ prefix: 'stale' })).map((l) => l.owner)).toEqual(['new']);
    await store.release('stale', lease!.token);
    await client.hset(`{${p}}rec:stale`, 'v', 'old', 'e', String(past));
    await client.zadd(`{${p}}recs`, 0, 'stale');
    expect(await store.get('stale')).toBeNull();
    expect(await store.scan('stale')).toEqual([]);
    expect(await store.delete('stale')).toBe(false);
    await store.close();
  });

  it('keeps index entries of released leases until sweep, which counts them', async () => {
    const p = `${prefix}s`;
    const store = await openStore(target.url!, { prefix: p });
    try {
      await store.sweep({ limit: 10_000 });
      const [lease] = await store.acquire([{ key: 'swept', owner: 'o', leaseMs: 50 }]);
      expect(await store.release('swept', lease!.token)).toBe(true);
      expect(await store.inspect('swept')).toBeNull();
      expect(await store.listLeases({ prefix: 'swept' })).toEqual([]);
      // listLeases removed the dead entry on its way; take it again and let it expire instead.
      const [again] = await store.acquire([{ key: 'swept', owner: 'o', leaseMs: 30 }]);
      expect(again!.token).toBeGreaterThan(lease!.token);
      await new Promise((r) => setTimeout(r, 80));
      expect(await store.sweep({ limit: 10 })).toEqual({ leases: 1, records: 0 });
      expect(await client.zcard(`{${p}}leases`)).toBe(0);
      expect(await client.zcard(`{${p}}lease-exp`)).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('records risky server settings and writes a schema marker; refuses a newer schema', async () => {
    const p = `${prefix}c`;
    const store = new RedisStore({ client, prefix: p });
    await store.migrate();
    expect(await client.get(`{${p}}schema`)).toBe('1');
    const [policy] = ((await client.config('GET', 'maxmemory-policy')) as string[]).slice(1);
    expect(store.warnings.some((w) => w.includes('maxmemory-policy'))).toBe(policy !== 'noeviction');
    await client.set(`{${p}}schema`, '2');
    const newer = new RedisStore({ client, prefix: p });
    await expect(newer.migrate()).rejects.toMatchObject({ code: 'SCHEMA' });
    await client.set(`{${p}}schema`, '1');
    await client.hset(`{${p}}lease:hash`, 'a', 'b');
    await expect(store.acquire([{ key: 'hash', owner: 'o', leaseMs: 1000 }])).rejects.toMatchObject({
      code: 'SCHEMA',
    });
    await client.del(`{${p}}lease:hash`);
    await store.close();
    await newer.close();
  });

  it('warns about maxmemory-policy allkeys-lru at open and still works; noeviction again: no warning', async () => {
    // A throwaway server: CONFIG SET on the shared one would reach every other test file.
    const own = await startRedis();
    const admin = new Redis(own.url, { lazyConnect: true });
    try {
      await admin.connect();
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const risky = (await openStore(own.url, { prefix: `${prefix}m` })) as RedisStore;
      try {
        // Not refused (docs/redis.md): the sentence names the policy and the fix.
        expect(risky.warnings).toContainEqual(expect.stringContaining('maxmemory-policy is allkeys-lru'));
        expect(risky.warnings.join('\n')).toContain('set maxmemory-policy noeviction');
        expect(await risky.acquire([{ key: 'lru', owner: 'o', leaseMs: 5_000 }])).not.toEqual([null]);
      } finally {
        await risky.close();
      }
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      const safe = (await openStore(own.url, { prefix: `${prefix}m` })) as RedisStore;
      expect(safe.warnings.filter((w) => w.includes('maxmemory-policy'))).toEqual([]);
      await safe.close();
    } finally {
      admin.disconnect();
      await own.stop();
    }
  });

  it('states the redis capabilities', async () => {
    const store = new RedisStore({ client, prefix: `${prefix}c` });
    expect(store.kind).toBe('redis');
    expect(store.capabilities).toEqual({
      fencing: true,
      durability: 'server',
      serverTime: true,
      multiProcess: true,
      multiHost: true,
      batchAcquire: true,
      batchApply: true,
      batchGet: true,
      serverCount: true,
      pages: true,
    });
    await store.close();
  });

  it('reads a batch and counts in exactly one EVALSHA each, and counts an empty store as 0', async () => {
    const calls: string[] = [];
    const counting = {
      call: (command: string, ...args: (string | number)[]) => {
        calls.push(command);
        return client.call(command, ...args);
      },
    };
    const p = `${prefix}e`;
    const store = new RedisStore({ client: counting, prefix: p });
    await store.migrate();
    // Nothing stored yet: the index sorted sets do not even exist.
    expect(await store.count('')).toBe(0);
    expect(await store.count('k')).toBe(0);
    expect(await store.getMany(['k1', 'k2'])).toEqual([null, null]);
    await store.apply([
      { op: 'put', key: 'k1', value: 'one' },
      { op: 'put', key: 'k2', value: 'two', ttlMs: 60_000 },
    ]);
    calls.length = 0;
    expect(await store.getMany(['k2', 'k3', 'k1', 'k2'])).toEqual(['two', null, 'one', 'two']);
    expect(calls).toEqual(['evalsha']);
    expect(await store.count('')).toBe(2);
    expect(await store.count('k1')).toBe(1);
    expect(calls).toEqual(['evalsha', 'evalsha', 'evalsha']);
    expect(await store.getMany([])).toEqual([]);
    expect(calls).toHaveLength(3);
    await store.close();
    await wipe(client, p);
  });

  it('counts exactly while Redis’ own expiry has removed expired records but sweep has not run', async () => {
    const p = `${prefix}e`;
    const store = new RedisStore({ client, prefix: p });
    await store.migrate();
    await store.apply([
      ...['a1', 'a2', 'b1'].map((key) => ({ op: 'put' as const, key, value: 'v', ttlMs: 50 })),
      ...['a3', 'b2'].map((key) => ({ op: 'put' as const, key, value: 'v' })),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 150));
    // Expire the hashes now, as Redis' own expiry does lazily; the index entries stay.
    for (const key of ['a1', 'a2', 'b1']) await client.del(`{${p}}rec:${key}`);
    expect(await client.zcard(`{${p}}recs`)).toBe(5);
    expect(await store.count('')).toBe(2);
    expect(await store.count('a')).toBe(1);
    expect(await store.count('b')).toBe(1);
    expect(await store.getMany(['a1', 'a3', 'b1', 'b2'])).toEqual([null, 'v', null, 'v']);
    await store.close();
    await wipe(client, p);
  });

  it('applies a batch in exactly one EVALSHA', async () => {
    const calls: string[] = [];
    const counting = {
      call: (command: string, ...args: (string | number)[]) => {
        calls.push(command);
        return client.call(command, ...args);
      },
    };
    const store = new RedisStore({ client: counting, prefix: `${prefix}c` });
    await store.migrate();
    const [lease] = await store.acquire([{ key: 'rt-lease', owner: 'o', leaseMs: 10_000 }]);
    const hold = (await store.now()) + 10_000;
    await store.apply([{ op: 'put', key: 'rt-flush', value: 'v' }]); // the script is known from here on
    calls.length = 0;
    const results = await store.apply([
      { op: 'put', key: 'rt-history', value: 'done', ttlMs: 60_000 },
      { op: 'delete', key: 'rt-flush' },
      { op: 'release', key: 'rt-lease', token: lease!.token, holdUntil: hold },
      { op: 'release', key: 'rt-gate', token: 1 },
    ]);
    expect(results).toEqual([true, true, true, false]);
    expect(calls).toEqual(['evalsha']);
    expect(await store.apply([])).toEqual([]);
    expect(calls).toEqual(['evalsha']);
    await store.close();
  });

  it('applies nothing when a key of the batch holds another program’s data (WRONGTYPE)', async () => {
    const p = `${prefix}c`;
    const store = new RedisStore({ client, prefix: p });
    await client.set(`{${p}}rec:foreign`, 'a plain string');
    await expect(
      store.apply([
        { op: 'put', key: 'wt-first', value: 'v' },
        { op: 'delete', key: 'foreign' },
      ]),
    ).rejects.toMatchObject({ code: 'SCHEMA' });
    expect(await store.get('wt-first')).toBeNull();
    // A put replaces whatever its key held, as put() does, and a later delete then finds a record.
    expect(
      await store.apply([
        { op: 'put', key: 'foreign', value: 'v' },
        { op: 'delete', key: 'foreign' },
      ]),
    ).toEqual([true, true]);
    await store.close();
  });

  it('rejects bad URLs and options with INVALID_ARGUMENT', () => {
    for (const url of ['redis://', 'redis://host:6379/x', 'redis://host?tls=true']) {
      expect(() => new RedisStore({ url })).toThrow(OncelyError);
    }
    expect(() => new RedisStore({})).toThrow(/client.*url/);
    expect(() => new RedisStore({ client, url: 'redis://x' })).toThrow(/not both/);
    expect(() => new RedisStore({ client, prefix: 'bad-prefix' })).toThrow(/prefix/);
  });
});

describe.skipIf(target.skip)('redis: a scan over expired, unswept records (issue 29, finding 4)', () => {
  it('walks a long dead stretch in bounded scripts, other clients served in between, and finds what follows', async () => {
    const p = testPrefix('deadscan');
    const store = await openStore(target.url!, { prefix: p });
    const redis = new Redis(target.url!);
    try {
      // 5,000 records that expire at once, and one live record after them in key order.
      for (let at = 0; at < 5_000; at += 1_000)
        await store.apply(
          Array.from({ length: 1_000 }, (_, i) => ({
            op: 'put' as const,
            key: `hist|${String(at + i).padStart(5, '0')}`,
            value: 'x',
            ttlMs: 50,
          })),
        );
      await store.put('hist|zz-live', 'alive');
      await new Promise((r) => setTimeout(r, 200));
      const calls = async () => {
        const stats = await redis.info('commandstats');
        return (
          Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0) +
          Number(/cmdstat_eval:calls=(\d+)/.exec(stats)?.[1] ?? 0)
        );
      };
      const before = await calls();
      expect(await store.scan('hist|', { limit: 1 })).toMatchObject([
        { key: 'hist|zz-live', value: 'alive' },
      ]);
      // One script used to walk all 5,000 (200,000 held Redis for 1.9 s); now at most ~1,000 each.
      expect((await calls()) - before).toBeGreaterThanOrEqual(5);
      // The dead entries it passed are gone: the next scan is one call.
      const again = await calls();
      expect(await store.scan('hist|', { limit: 10 })).toHaveLength(1);
      expect((await calls()) - again).toBe(1);
    } finally {
      redis.disconnect();
      await store.close();
    }
  }, 60_000);
});

describe.skipIf(target.skip)('redis: a count over expired, unswept records (issue 29)', () => {
  it('walks at most ~1,000 index entries per script, the rest in further calls, and stays exact', async () => {
    const p = testPrefix('deadcount');
    const redis = new Redis(target.url!);
    // Counts this store's scripts only (INFO commandstats would count other test files' too).
    let scripts = 0;
    const client = {
      call: (command: string, ...args: (string | number)[]) => {
        if (command === 'evalsha' || command === 'eval') scripts++;
        return redis.call(command, ...args);
      },
    };
    const store = new RedisStore({ client, prefix: p });
    await store.migrate();
    const put = async (keys: string[], ttlMs?: number) => {
      for (let at = 0; at < keys.length; at += 1_000)
        await store.apply(
          keys.slice(at, at + 1_000).map((key) => ({
            op: 'put' as const,
            key,
            value: 'x',
            ...(ttlMs !== undefined && { ttlMs }),
          })),
        );
    };
    const numbered = (head: string, n: number) =>
      Array.from({ length: n }, (_, i) => `${head}${String(i).padStart(5, '0')}`);
    try {
      // 5,100 records that expire at once (5,000 under hist|, 100 under sch|) among live ones:
      // 2,500 under sch|, 1 under hist|, 6,000 under a|.
      await put([...numbered('hist|', 5_000), ...numbered('sch|dead-', 100)], 50);
      await put([...numbered('sch|', 2_500), 'hist|zz-live', ...numbered('a|', 6_000)]);
      await new Promise((r) => setTimeout(r, 200));
      const counted = async (prefix: string) => {
        const before = scripts;
        const n = await store.count(prefix);
        return { n, scripts: scripts - before };
      };
      // Fewer records in the range than expired ones: the range is walked, ~1,000 keys a script
      // (one script used to walk all of it, or all the expired entries: 200,000 held Redis ~120 ms).
      expect(await counted('sch|')).toMatchObject({ n: 2_500 });
      expect((await counted('sch|')).scripts).toBeGreaterThanOrEqual(3);
      expect(await counted('hist|')).toMatchObject({ n: 1 });
      expect((await counted('hist|')).scripts).toBeGreaterThanOrEqual(5);
      // Reading the range removes nothing.
      expect(await redis.zcard(`{${p}}rec-exp`)).toBe(5_100);
      // More records in the range than expired ones: the expired ones are swept, ~1,000 a script,
      // until the rest fits one walk; the count is then one script, exact and atomic.
      const wide = await counted('a|');
      expect(wide.n).toBe(6_000);
      expect(wide.scripts).toBeGreaterThanOrEqual(6);
      expect(await redis.zcard(`{${p}}rec-exp`)).toBeLessThanOrEqual(1_000);
      expect(await counted('sch|')).toEqual({ n: 2_500, scripts: 1 });
      expect(await counted('')).toEqual({ n: 8_501, scripts: 1 });
    } finally {
      await store.close();
      await wipe(redis, p);
      redis.disconnect();
    }
  }, 60_000);
});

describe.skipIf(target.skip)('redis: claimPage (issue 30)', () => {
  it('claims a page in one EVALSHA and keeps the record indexes count, scan and sweep rely on', async () => {
    const p = testPrefix('pageidx');
    const redis = new Redis(target.url!);
    const calls: string[] = [];
    const client = {
      call: (command: string, ...args: (string | number)[]) => {
        calls.push(command);
        return redis.call(command, ...args);
      },
    };
    const store = new RedisStore({ client, prefix: p });
    await store.migrate();
    try {
      await store.apply([
        { op: 'put', key: 'a', value: 'a' },
        { op: 'put', key: 'b', value: 'b', ttlMs: 60_000 },
        { op: 'put', key: 'stale', value: 'old', ttlMs: 50 },
        { op: 'put', key: 'z', value: 'old z', ttlMs: 60_000 },
      ]);
      await new Promise((resolve) => setTimeout(resolve, 150));
      // Redis' own expiry removed the hash; its index entries (`rec-exp` score in the past) stay.
      await redis.del(`{${p}}rec:stale`);
      await store.claimPage({ key: 'warm', owner: 'o', leaseMs: 1_000 }, []); // the script is known now
      calls.length = 0;
      const { lease, results } = await store.claimPage({ key: 'page', owner: 'n1', leaseMs: 10_000 }, [
        { op: 'move', from: 'a', to: 'a2', value: 'moved a' },
        { op: 'move', from: 'b', to: 'stale', value: 'moved b' },
        { op: 'move', from: 'gone', to: 'g2', value: 'never' },
        { op: 'create', key: 'y', value: 'created', ttlMs: 30_000 },
        { op: 'put', key: 'z', value: 'new z' },
      ]);
      expect(calls).toEqual(['evalsha']);
      expect(results).toEqual([true, true, false, true, true]);
      // `recs` holds exactly the stored records, `rec-exp` exactly those with a ttl, by expiresAt.
      expect(await redis.zrange(`{${p}}recs`, 0, -1)).toEqual(['a2', 'stale', 'y', 'z']);
      expect(await redis.zrange(`{${p}}rec-exp`, 0, -1, 'WITHSCORES')).toEqual([
        'y',
        String(lease!.acquiredAt + 30_000),
      ]);
      // A record written without ttl carries neither an `e` field nor a Redis expiry.
      expect(await redis.hgetall(`{${p}}rec:stale`)).toEqual({ v: 'moved b' });
      expect(await redis.pttl(`{${p}}rec:stale`)).toBe(-1);
      expect(await redis.hgetall(`{${p}}rec:z`)).toEqual({ v: 'new z' });
      expect(await redis.pttl(`{${p}}rec:z`)).toBe(-1);
      expect(await redis.pttl(`{${p}}rec:y`)).toBeGreaterThan(20_000);
      expect(await redis.exists(`{${p}}rec:a`, `{${p}}rec:b`, `{${p}}rec:g2`)).toBe(0);
      expect(await store.count('')).toBe(4);
      expect(await store.sweep()).toEqual({ leases: 0, records: 0 });
      expect((await store.scan('')).map((r) => [r.key, r.value, r.expiresAt])).toEqual([
        ['a2', 'moved a', null],
        ['stale', 'moved b', null],
        ['y', 'created', lease!.acquiredAt + 30_000],
        ['z', 'new z', null],
      ]);
    } finally {
      await store.close();
      await wipe(redis, p);
      redis.disconnect();
    }
  });

  it('applies nothing, lease included, when a key of the page holds another program’s data (WRONGTYPE)', async () => {
    const p = testPrefix('pagewt');
    const redis = new Redis(target.url!);
    const store = new RedisStore({ client: redis, prefix: p });
    await store.migrate();
    try {
      await store.acquire([{ key: 'first', owner: 'o', leaseMs: 10_000 }]);
      await store.put('due', 'due');
      const fence = await redis.get(`{${p}}fence`);
      const page = (from: string) =>
        store.claimPage({ key: 'page', owner: 'n1', leaseMs: 10_000 }, [
          { op: 'put', key: 'record', value: 'r' },
          { op: 'move', from: 'due', to: 'next', value: 'moved' },
          { op: 'move', from, to: 'elsewhere', value: 'moved' },
        ]);
      // A record read by the page, then an index, hold a plain string.
      await redis.set(`{${p}}rec:foreign`, 'a plain string');
      await expect(page('foreign')).rejects.toMatchObject({ code: 'SCHEMA' });
      await redis.set(`{${p}}rec-exp`, 'a plain string');
      await expect(page('absent')).rejects.toMatchObject({ code: 'SCHEMA' });
      await redis.del(`{${p}}rec-exp`);
      expect(await redis.get(`{${p}}fence`)).toBe(fence);
      expect(await store.inspect('page')).toBeNull();
      expect(await store.getMany(['record', 'due', 'next'])).toEqual([null, 'due', null]);
    } finally {
      await store.close();
      await wipe(redis, p);
      redis.disconnect();
    }
  });
});
