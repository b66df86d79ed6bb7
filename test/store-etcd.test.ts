import { type AddressInfo, createServer, type Socket } from 'node:net';
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OncelyError, openStore } from '../src/index.js';
import { EtcdStore } from '../src/store/etcd.js';
import { describeStore } from '../src/testing/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { refused } from './harness/refused.js';

const target = serverBackend('etcd');
const prefix = testPrefix('etcd');

describeStore('etcd', () => openStore(target.url!, { prefix }), { skip: target.skip });

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

suite('etcd store specifics', () => {
  let client: Etcd3;
  let endpoint: string;

  beforeAll(() => {
    endpoint = target.url!.replace(/^etcd:/, 'http:');
    client = new Etcd3({ hosts: endpoint });
  });
  afterAll(async () => {
    for (const p of [`${prefix}c`, `${prefix}f`]) await client.delete().prefix(`${p}/`);
    client.close();
  });

  it('works on the caller’s etcd3 client and leaves it open on close()', async () => {
    const store = new EtcdStore({ client, clockUrls: [endpoint], prefix: `${prefix}c` });
    await store.migrate();
    const lock = await store.tryLock({ name: 'own-client', lockAtMostFor: '10s' });
    expect(lock).not.toBeNull();
    expect(await client.get(`${prefix}c/lease/lock:own-client`).string()).toMatch(/^\d{16}\|#0\|\d+\|/);
    expect(await lock!.release()).toBe(true);
    await store.close();
    expect(await client.get(`${prefix}c/schema`).string()).toBe('1');
  });

  it('fails openStore with STORE_UNAVAILABLE within the timeout when nothing listens', async () => {
    const started = performance.now();
    const err = await openError('etcd://127.0.0.1:1', { connectTimeoutMs: 5_000 });
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
      const err = await openError(`etcd://127.0.0.1:${port}`, { connectTimeoutMs: 1_000 });
      expect(err.code).toBe('STORE_UNAVAILABLE');
      expect(performance.now() - started).toBeLessThan(3_000);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('never shows the password in errors', async () => {
    for (const url of [
      'etcd://root:secret-pw@127.0.0.1:1',
      'etcd://root:secret-pw@127.0.0.1:1,127.0.0.1:2',
    ]) {
      const err = await openError(url, { connectTimeoutMs: 2_000 });
      expect(err.code).toBe('STORE_UNAVAILABLE');
      expect(err.message).not.toContain('secret-pw');
    }
    const bad = await openError('etcd://root:secret-pw@127.0.0.1:1/path');
    expect(bad.code).toBe('INVALID_ARGUMENT');
    expect(bad.message).not.toContain('secret-pw');
  });

  it('rejects bad URLs and options with INVALID_ARGUMENT', async () => {
    for (const url of [
      'etcd://',
      'etcd://host:99999',
      'etcd://host?tls=1',
      'etcd://a b',
      'etcd://h1,,h2',
      'etcd://:pw@h',
    ]) {
      expect(() => new EtcdStore({ url }), url).toThrow(OncelyError);
      expect((await openError(url)).code).toBe('INVALID_ARGUMENT');
    }
    expect(() => new EtcdStore({})).toThrow(/client.*url/);
    expect(() => new EtcdStore({ client, url: 'etcd://x' })).toThrow(/exactly one of/);
    expect(() => new EtcdStore({ client })).toThrow(/clockUrls/);
    expect(() => new EtcdStore({ client, clockUrls: [endpoint], prefix: 'bad-prefix' })).toThrow(/prefix/);
  });

  it('opens a store on a list of members, the first being the clock', async () => {
    const store = await openStore(`${target.url!},${target.url!.replace('etcd://', '')}`, {
      prefix: `${prefix}c`,
    });
    const [lease] = await store.acquire([{ key: 'multi', owner: 'o', leaseMs: 1000 }]);
    expect(lease).not.toBeNull();
    await store.close();
  });

  it('reads the member’s clock to a few ms, whatever the caller’s Date.now() says', async () => {
    const store = new EtcdStore({ client, clockUrls: [endpoint], prefix: `${prefix}c` });
    await store.migrate();
    const spy = vi
      .spyOn(Date, 'now')
      .mockImplementation(() => performance.timeOrigin + performance.now() + 3_600_000);
    try {
      const now = await store.now();
      expect(Math.abs(now - (performance.timeOrigin + performance.now()))).toBeLessThan(1_000);
    } finally {
      spy.mockRestore();
    }
    await store.close();
  });

  it('keeps fencing tokens increasing after all of its keys were lost', async () => {
    const p = `${prefix}f`;
    const store = await openStore(target.url!, { prefix: p });
    try {
      const [first] = await store.acquire([{ key: 'fenced', owner: 'o', leaseMs: 10_000 }]);
      const [second] = await store.acquire([{ key: 'other', owner: 'o', leaseMs: 10_000 }]);
      expect(second!.token).toBeGreaterThan(first!.token);
      // The base is the store time when the fence was written: tokens are far above revisions.
      expect(first!.token).toBeGreaterThan(1_000_000_000_000_000);
      expect(Number.isSafeInteger(first!.token)).toBe(true);
      // Wipe the prefix, and pretend the cluster's revisions restarted: the base was smaller.
      await client.delete().prefix(`${p}/`);
      await client.put(`${p}/fence`).value('1');
      const [low] = await store.acquire([{ key: 'fenced', owner: 'o', leaseMs: 10_000 }]);
      expect(low!.token).toBeLessThan(first!.token); // a lost fence cannot be undone by itself…
      await client.delete().prefix(`${p}/`);
      const [after] = await store.acquire([{ key: 'fenced', owner: 'o', leaseMs: 10_000 }]);
      expect(after!.token).toBeGreaterThan(second!.token); // …but a missing one is re-seeded from the clock
    } finally {
      await store.close();
    }
  });

  it('states the etcd capabilities', () => {
    const store = new EtcdStore({ client, clockUrls: [endpoint], prefix: `${prefix}c` });
    expect(store.kind).toBe('etcd');
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
  });

  it('claims a page in one Txn when its lease key is free or held, two when it holds an expired lease', async () => {
    const sent: string[] = [];
    const counting = {
      kv: {
        range: (request: Parameters<Etcd3['kv']['range']>[0]) => {
          sent.push('range');
          return client.kv.range(request);
        },
        txn: (request: Parameters<Etcd3['kv']['txn']>[0]) => {
          sent.push('txn');
          return client.kv.txn(request);
        },
      },
    };
    const store = new EtcdStore({ client: counting, clockUrls: [endpoint], prefix: `${prefix}c` });
    await store.migrate();
    await store.put('page/due', 'due');
    const page = [
      { op: 'move', from: 'page/due', to: 'page/next', value: 'v' },
      { op: 'create', key: 'page/occ', value: 'c' },
      { op: 'put', key: 'page/record', value: 'r' },
    ] as const;
    const claim = async (leaseMs: number) => {
      sent.length = 0;
      const result = await store.claimPage({ key: 'page/lease', owner: 'n1', leaseMs }, page);
      return { ...result, sent: [...sent] };
    };
    const fresh = await claim(1_000);
    expect(fresh.results).toEqual([true, true, true]);
    expect(fresh.sent).toEqual(['txn']);
    const held = await claim(10_000);
    expect(held).toEqual({ lease: null, results: [false, false, false], sent: ['txn'] });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const expired = await claim(10_000);
    expect(expired.lease!.token).toBeGreaterThan(fresh.lease!.token);
    expect(expired.results).toEqual([false, false, true]); // moved and created by the first page
    expect(expired.sent).toEqual(['txn', 'txn']);
    await store.close();
  });
});

describe.skipIf(target.skip)('etcd: a write over the size limits (issue 29, finding 5)', () => {
  it('is INVALID_ARGUMENT naming --max-request-bytes, not an outage to retry', async () => {
    const store = await openStore(target.url!, { prefix: testPrefix('etbig') });
    try {
      for (const size of [2 * 1024 * 1024, 5 * 1024 * 1024]) {
        const err = await refused(store.put('big', 'x'.repeat(size)));
        expect(err).toMatchObject({
          code: 'INVALID_ARGUMENT',
          message: expect.stringContaining('max-request-bytes'),
        });
      }
      await store.put('small', 'ok');
      expect(await store.get('small')).toBe('ok');
      // A create's value goes out twice (in both of its branches), so it counts twice.
      const creates = Array.from({ length: 2 }, (_, i) => ({
        op: 'create' as const,
        key: `c${i}`,
        value: 'x'.repeat(400_000),
      }));
      const err = await refused(store.claimPage({ key: 'page', owner: 'o', leaseMs: 10_000 }, creates));
      expect(err).toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('counts twice'),
      });
      expect(await store.inspect('page')).toBeNull();
    } finally {
      await store.close();
    }
  }, 60_000);
});
