import { describe, expect, it, vi } from 'vitest';
import { redactSecret, urlPassword } from '../src/core/redact.js';
import {
  MemoryStore,
  OncelyError,
  openStore,
  parseDuration,
  prefixUpperBound,
  redactUrl,
  StoreClock,
  validatePrefix,
} from '../src/index.js';
import { safetyMargin } from '../src/lock/keep-alive.js';
import { RunLeases } from '../src/scheduler/run/run-leases.js';
import { compareKeys, requireWellFormed, sortByKey } from '../src/store/validate.js';

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof OncelyError ? err.code : `not an OncelyError: ${String(err)}`;
  }
  return undefined;
}

describe('parseDuration', () => {
  it.each([
    [250, 250],
    [0, 0],
    ['250ms', 250],
    ['30s', 30_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['1w', 604_800_000],
    ['1h30m', 5_400_000],
    ['1.5s', 1500],
    [' 10s ', 10_000],
    ['PT5M', 300_000],
    ['P1D', 86_400_000],
    ['P1DT2H', 93_600_000],
    ['PT0.5S', 500],
    ['pt1h', 3_600_000],
    [1.6, 2],
  ])('%j -> %d ms', (input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  it.each([
    [''],
    ['soon'],
    ['5'],
    ['5 parsecs'],
    ['P1Y'],
    ['P1M'],
    ['PT'],
    ['P'],
    [-1],
    [Number.NaN],
    [Infinity],
    ['-5s'],
  ])('refuses %j with INVALID_ARGUMENT naming the field', (input) => {
    expect(code(() => parseDuration(input as never, 'retryDelay'))).toBe('INVALID_ARGUMENT');
    expect(() => parseDuration(input as never, 'retryDelay')).toThrow(/retryDelay/);
  });
});

describe('prefixes and key ranges', () => {
  it.each([['oncely_'], ['_x'], ['A1_b2'], ['a'.repeat(31)]])('accepts prefix %j', (p) => {
    expect(validatePrefix(p)).toBe(p);
  });
  it.each([
    [''],
    ['1abc'],
    ['a-b'],
    ['a b'],
    ['a;drop'],
    ['a'.repeat(32)],
    ['é'],
  ])('refuses prefix %j', (p) => {
    expect(code(() => validatePrefix(p))).toBe('INVALID_ARGUMENT');
  });

  it('computes the exclusive upper bound of a prefix in code point order', () => {
    expect(prefixUpperBound('')).toBeUndefined();
    expect(prefixUpperBound('ab')).toBe('ac');
    expect(prefixUpperBound('a\u{10ffff}')).toBe('b');
    expect(prefixUpperBound('\u{10ffff}')).toBeUndefined();
    expect(prefixUpperBound('a\ud7ff')).toBe('a\ue000');
    expect(prefixUpperBound('x🔒')).toBe(`x${String.fromCodePoint(0x1f513)}`);
  });

  it('compares keys in UTF-8 byte order, as the stores sort them', () => {
    // Units from every range that matters: ASCII, 2- and 3-byte, the U+E000–U+FFFF units that
    // UTF-16 order puts after surrogates, and astral characters (surrogate pairs).
    const alphabet = [
      'a',
      'b',
      '|',
      '\u00e9',
      '\u07ff',
      '\u0800',
      '\ud7ff',
      '\ue000',
      '\uffff',
      '🔒',
      '\u{10000}',
      '\u{10ffff}',
    ];
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const word = () =>
      Array.from(
        { length: Math.floor(random() * 4) },
        () => alphabet[Math.floor(random() * alphabet.length)],
      ).join('');
    const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);
    for (let i = 0; i < 5_000; i++) {
      const a = word();
      const b = random() < 0.3 ? a + word() : word();
      const bytes = sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
      expect([a, b, sign(compareKeys(a, b))]).toEqual([a, b, bytes]);
      expect(sign(compareKeys(b, a))).toBe(bytes === 0 ? 0 : -bytes);
    }
    // sortByKey takes `<` when no key has a unit from U+D800 up: batches of either kind sort in
    // UTF-8 byte order (a lone high key makes the whole batch take compareKeys).
    const utf8 = (x: { key: string }, y: { key: string }) =>
      Buffer.compare(Buffer.from(x.key, 'utf8'), Buffer.from(y.key, 'utf8'));
    const ascii = alphabet.filter((c) => c.charCodeAt(0) < 0xd800);
    for (const letters of [alphabet, ascii]) {
      for (let round = 0; round < 50; round++) {
        const items = Array.from({ length: 40 }, () => ({
          key: `ctl|run|${Array.from({ length: 3 }, () => letters[Math.floor(random() * letters.length)]).join('')}`,
        }));
        expect(sortByKey([...items]).map((x) => x.key)).toEqual([...items].sort(utf8).map((x) => x.key));
      }
    }
  });

  it('refuses text with a lone surrogate, and only that', () => {
    for (const bad of ['\ud800', 'a\udfff', '\udc00\ud800', 'x\ud83d']) {
      expect(code(() => requireWellFormed(bad, 'key'))).toBe('INVALID_ARGUMENT');
    }
    for (const good of ['', 'abc', '🔒', 'a\ud83d\udd12b', '\uffff\ue000']) {
      expect(() => requireWellFormed(good, 'key')).not.toThrow();
    }
  });
});

describe('redactUrl', () => {
  it('hides passwords and keeps everything else', () => {
    expect(redactUrl('postgres://app:s3cret@db:5432/x')).toBe('postgres://app:***@db:5432/x');
    expect(redactUrl('redis://:pw@127.0.0.1:6379')).toBe('redis://:***@127.0.0.1:6379');
    expect(redactUrl('sqlite:./oncely.db')).toBe('sqlite:./oncely.db');
    expect(redactUrl('mysql://u@h/db')).toBe('mysql://u@h/db');
  });
});

describe('redactSecret', () => {
  it('redacts every occurrence of a password, and only the URL forms of a very short one', () => {
    expect(redactSecret('auth failed for s3cret (s3cret)', 's3cret')).toBe('auth failed for *** (***)');
    expect(redactSecret('cannot open postgres://u:p@h/db', 'p')).toBe('cannot open postgres://u:***@h/db');
    expect(redactSecret('no password', undefined)).toBe('no password');
  });
});

describe('urlPassword', () => {
  it('finds the decoded password to redact, or nothing', () => {
    expect(urlPassword('postgres://app:s%40cret@db:5432/x')).toBe('s@cret');
    expect(urlPassword('redis://:pw@127.0.0.1:6379')).toBe('pw');
    expect(urlPassword('mysql://u@h/db')).toBeUndefined();
    expect(urlPassword('sqlite:./oncely.db')).toBeUndefined();
    expect(urlPassword('not a url')).toBeUndefined();
    expect(urlPassword('etcd://u:p%40w@h1:2379,h2:2379')).toBe('p@w');
    expect(urlPassword('mysql://u:50%zz@h/db')).toBeUndefined();
    expect(urlPassword(undefined)).toBeUndefined();
  });
});

describe('StoreClock', () => {
  it('tracks the store clock through a skewed local clock and keeps the tightest sample', async () => {
    let local = 1_000;
    const clock = { monotonic: () => local, sleep: async () => {} };
    const storeOffset = 1_700_000_000_000;
    let rtt = 40;
    const sync = new StoreClock(async () => {
      const at = local + rtt / 2;
      local += rtt;
      return at + storeOffset;
    }, clock);
    await sync.sample();
    expect(sync.estimate()).toBe(local + storeOffset);
    expect(sync.errorBound()).toBe(20);
    rtt = 100; // a worse sample does not replace a better one
    await sync.sample();
    expect(sync.errorBound()).toBe(20);
    local += 5_000;
    expect(sync.estimate()).toBe(local + storeOffset);
  });
});

describe('keep-alive safety margin', () => {
  it('is a tenth of the lease, between 1 ms and 1 s', () => {
    expect(safetyMargin(300)).toBe(30);
    expect(safetyMargin(5)).toBe(1);
    expect(safetyMargin(3_600_000)).toBe(1_000);
  });
});

describe('openStore', () => {
  it('refuses unknown schemes, empty URLs and bad prefixes with INVALID_ARGUMENT', async () => {
    for (const [url, prefix] of [
      ['mongodb://x', undefined],
      ['', undefined],
      ['nonsense', undefined],
      ['memory:', 'bad-prefix'],
      ['memory:', '9lives'],
    ] as const) {
      await expect(openStore(url, prefix === undefined ? {} : { prefix })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    }
  });

  it('refuses malformed server URLs with INVALID_ARGUMENT, not as an unreachable server', async () => {
    for (const url of [
      'postgres://u:hunter2@db:99999/x',
      'postgres:nothing',
      'mysql://u:hunter2@[::1/db',
      'redis://u:hunter2@host:port',
    ]) {
      const err = (await openStore(url).catch((e: unknown) => e)) as OncelyError;
      expect(err.code, url).toBe('INVALID_ARGUMENT');
      expect(err.message).toMatch(/malformed store URL/);
      expect(err.message).not.toContain('hunter2');
    }
  });

  it('redacts the password when refusing an unknown scheme', async () => {
    const err = (await openStore('mongodb://u:hunter2@host/db').catch((e: unknown) => e)) as OncelyError;
    expect(err.message).not.toContain('hunter2');
  });

  it('opens memory stores: private ones, and named ones shared within the process', async () => {
    const a = await openStore('memory:shared-test');
    const b = await openStore('memory:shared-test');
    const c = await openStore('memory:');
    const lock = await a.tryLock({ name: 'x', lockAtMostFor: '1m' });
    expect(lock).not.toBeNull();
    expect(await b.tryLock({ name: 'x', lockAtMostFor: '1m' })).toBeNull();
    expect(await c.tryLock({ name: 'x', lockAtMostFor: '1m' })).not.toBeNull();
    expect(a).toBeInstanceOf(MemoryStore);
  });

  it('normalises thrown values into OncelyError', () => {
    const e = OncelyError.from(new TypeError('x'), 'STORE_UNAVAILABLE');
    expect(e.code).toBe('STORE_UNAVAILABLE');
    expect(e.cause).toBeInstanceOf(TypeError);
    expect(OncelyError.from(e)).toBe(e);
  });
});

describe('run leases (a run keep-alive renews its occurrence and gate together)', () => {
  let t = 1_000;
  const clock = { monotonic: () => t, sleep: async () => {} };

  it('ends locally no later than either lease, and moves only when both were extended', async () => {
    const store = new MemoryStore();
    const [occ, gate] = await store.acquire([
      { key: 'occ|a', owner: 'n1', leaseMs: 5_000 },
      { key: 'run|a', owner: 'n1', leaseMs: 3_000 },
    ]);
    const leases = new RunLeases(store, clock, occ!, gate!, 900);
    expect(leases.localDeadline).toBe(900 + 3_000);
    expect(leases.name).toBe('occ|a');
    t = 2_000;
    expect(await leases.extend(10_000)).toBe(true);
    expect(leases.localDeadline).toBe(2_000 + 10_000);
    const now = await store.now();
    for (const key of ['occ|a', 'run|a'])
      expect((await store.inspect(key))!.expiresAt).toBeGreaterThanOrEqual(now + 9_000);
    // The gate's token no longer holds it (released): the pair is lost, and stays lost.
    expect(await store.release('run|a', gate!.token)).toBe(true);
    expect(await leases.extend(10_000)).toBe(false);
    const extend = vi.spyOn(store, 'extend');
    expect(await leases.extend(10_000)).toBe(false);
    expect(extend).not.toHaveBeenCalled();
    await store.close();
  });

  it('is the occurrence alone for a run without a gate', async () => {
    const store = new MemoryStore();
    const [occ] = await store.acquire([{ key: 'occ|b', owner: 'n1', leaseMs: 4_000 }]);
    const leases = new RunLeases(store, clock, occ!, undefined, 100);
    expect(leases.localDeadline).toBe(4_100);
    expect(await leases.extend(1_000)).toBe(true);
    // Never shortened: the earlier deadline (4,100) still bounds it.
    expect(leases.localDeadline).toBe(Math.max(4_100, t + 1_000));
    await store.close();
  });
});
