import { describe, expect, it, vi } from 'vitest';
import type { Store, WriteOp } from '../store/types.js';
import { MAX_BATCH } from '../store/validate.js';
import { ODD_STRINGS } from './odd-data.js';
import { expectCode, type SuiteContext, sleep } from './suite-context.js';

/** Every live record under `prefix`, paged through `scan` with the cursor. */
async function scanAll(store: Store, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for (;;) {
    const page = await store.scan(prefix, {
      limit: 10_000,
      ...(keys.length > 0 ? { after: keys.at(-1)! } : {}),
    });
    keys.push(...page.map((r) => r.key));
    if (page.length < 10_000) return keys;
  }
}

/** Puts `count` records `<prefix><n>` in batches of MAX_BATCH. */
async function putMany(store: Store, prefix: string, count: number, ttlMs?: number): Promise<void> {
  for (let from = 0; from < count; from += MAX_BATCH) {
    const ops = Array.from(
      { length: Math.min(MAX_BATCH, count - from) },
      (_, i): WriteOp => ({
        op: 'put',
        key: `${prefix}${String(from + i).padStart(5, '0')}`,
        value: 'v',
        ...(ttlMs === undefined ? {} : { ttlMs }),
      }),
    );
    await store.apply(ops);
  }
}

/**
 * Conformance: the batch reads `getMany` (one result per key, in order, on the store clock) and
 * `count` (exact, by prefix as `scan` matches it, expired records never counted).
 */
export function describeReads(ctx: SuiteContext): void {
  describe('getMany (batched reads)', () => {
    it('reads a batch in order: null for missing, deleted and expired records, one answer per repeated key', async () => {
      const base = ctx.unique('many');
      const k = (name: string) => `${base}/${name}`;
      await ctx.store.put(k('a'), 'A');
      await ctx.store.put(k('b'), '');
      await ctx.store.put(k('c'), 'C 🚀 \'quoted\' "x"');
      await ctx.store.put(k('short'), 'S', { ttlMs: 150 });
      await ctx.store.put(k('long'), 'L', { ttlMs: 60_000 });
      await ctx.store.put(k('gone'), 'G');
      expect(await ctx.store.delete(k('gone'))).toBe(true);
      const keys = ['c', 'missing', 'a', 'short', 'b', 'a', 'long', 'gone', 'a'].map(k);
      expect(await ctx.store.getMany(keys)).toEqual([
        'C 🚀 \'quoted\' "x"',
        null,
        'A',
        'S',
        '',
        'A',
        'L',
        null,
        'A',
      ]);
      await sleep(300);
      const other = await ctx.open();
      expect(await other.getMany(keys)).toEqual([
        'C 🚀 \'quoted\' "x"',
        null,
        'A',
        null,
        '',
        'A',
        'L',
        null,
        'A',
      ]);
      expect(await other.getMany([k('short'), k('short')])).toEqual([null, null]);
      // The same answers as get, key by key.
      for (const key of keys) expect(await ctx.store.get(key)).toBe((await ctx.store.getMany([key]))[0]);
    });

    it('reads odd keys as data, byte for byte', async () => {
      const base = ctx.unique('many-odd');
      const keys = ODD_STRINGS.map((raw, i) => `${base}/${String(i).padStart(2, '0')}/${raw}`);
      expect(
        await ctx.store.apply(keys.map((key, i): WriteOp => ({ op: 'put', key, value: ODD_STRINGS[i]! }))),
      ).toEqual(keys.map(() => true));
      expect(await ctx.store.getMany(keys)).toEqual(ODD_STRINGS);
      // Near misses are other keys: case, trailing spaces, a backslash less, a prefix of a key.
      const nearMisses = [
        `${base}/15/TRAILING SPACES  `,
        `${base}/15/trailing spaces`,
        `${base}/05/back'quote`,
        `${base}/10/100%_lik`,
        `${base}/11/100_`,
        `${base}/19/${'🔒'.repeat(99)}`,
      ];
      expect(await ctx.store.getMany([...nearMisses, keys[0]!])).toEqual([
        ...nearMisses.map(() => null),
        ODD_STRINGS[0],
      ]);
    });

    it(`reads ${MAX_BATCH} keys in one call, with any batch size up to it`, async () => {
      const base = ctx.unique('many-max');
      await putMany(ctx.store, `${base}/`, MAX_BATCH / 2);
      const keys = Array.from({ length: MAX_BATCH }, (_, i) => `${base}/${String(i).padStart(5, '0')}`);
      const expected = keys.map((_, i) => (i < MAX_BATCH / 2 ? 'v' : null));
      const shuffled = keys.map((_, i) => (i * 7919) % MAX_BATCH);
      expect(await ctx.store.getMany(shuffled.map((i) => keys[i]!))).toEqual(
        shuffled.map((i) => expected[i]),
      );
      for (const size of [1, 2, 3, 17, 255, 256, 257, MAX_BATCH - 1]) {
        const from = MAX_BATCH / 2 - Math.floor(size / 2);
        expect(await ctx.store.getMany(keys.slice(from, from + size))).toEqual(
          expected.slice(from, from + size),
        );
      }
      // Many repeats of a few keys.
      const repeated = Array.from({ length: MAX_BATCH }, (_, i) => keys[(i % 3) * 400]!);
      expect(await ctx.store.getMany(repeated)).toEqual(
        repeated.map((_, i) => ((i % 3) * 400 < 500 ? 'v' : null)),
      );
    }, 60_000);

    it(`refuses more than ${MAX_BATCH} keys, bad keys and non-arrays with INVALID_ARGUMENT; [] is []`, async () => {
      expect(await ctx.store.getMany([])).toEqual([]);
      const tooMany = Array.from({ length: MAX_BATCH + 1 }, (_, i) => `k${i}`);
      await expectCode(ctx.store.getMany(tooMany), 'INVALID_ARGUMENT');
      const key = ctx.unique('many-bad');
      for (const bad of ['', 'x'.repeat(513), 'nul\u0000', 'k\ud800', 42, null, undefined]) {
        await expectCode(ctx.store.getMany([key, bad as string]), 'INVALID_ARGUMENT');
      }
      for (const notArray of ['k', { 0: 'k', length: 1 }, null, undefined]) {
        await expectCode(ctx.store.getMany(notArray as never), 'INVALID_ARGUMENT');
      }
    });

    it('judges expiry by the store clock, not the caller’s Date.now()', async () => {
      const key = ctx.unique('many-clock');
      await ctx.store.put(key, 'v', { ttlMs: 30_000 });
      const spy = vi
        .spyOn(Date, 'now')
        .mockImplementation(() => performance.timeOrigin + performance.now() + 3_600_000);
      try {
        expect(await ctx.store.getMany([key])).toEqual(['v']);
        expect(await ctx.store.count(key)).toBe(1);
      } finally {
        spy.mockRestore();
      }
    });
  });

  describe('count', () => {
    it('counts live records by prefix, exactly as scan matches it (%, _ and \\ literal)', async () => {
      const base = ctx.unique('count');
      const names = [
        'a',
        'ab',
        'abc',
        'abd',
        'b',
        'a%',
        'a%b',
        'a_',
        'a_b',
        'ax',
        'a\\',
        'a\\b',
        'a\\\\',
        'A',
        'a ',
      ];
      for (const name of names) await ctx.store.put(`${base}/${name}`, name);
      await ctx.store.put(`${base}-sibling`, 'x');
      await ctx.store.put(`${base}`, 'x');
      const prefixes = [
        '',
        'a',
        'ab',
        'abc',
        'abcd',
        'a%',
        'a_',
        'a\\',
        'a\\\\',
        'A',
        'a ',
        'b',
        'c',
        '%',
        '_',
        '\\',
      ];
      for (const p of prefixes) {
        const prefix = `${base}/${p}`;
        const expected = names.filter((n) => n.startsWith(p)).length;
        expect(await ctx.store.count(prefix), `count(${JSON.stringify(prefix)})`).toBe(expected);
        expect((await scanAll(ctx.store, prefix)).length).toBe(expected);
      }
      expect(await ctx.store.count(base)).toBe(names.length + 2);
      expect(await ctx.store.count(`${base}-`)).toBe(1);
      expect(await ctx.store.count(`${base}/a%b`)).toBe(1);
    });

    it('counts Unicode prefixes in code point order, as scan does (above the BMP, U+10FFFF, around the surrogates)', async () => {
      const base = ctx.unique('count-uni');
      const names = [
        '🔒',
        '🔒a',
        '🔒🔒',
        '🔓',
        'é',
        'éa',
        '\uFF5E',
        '\uFF5Ex',
        '\uD7FF',
        '\uD7FFa',
        '\uE000',
        '\u{10FFFF}',
        '\u{10FFFF}\u{10FFFF}',
        '\u{10FFFE}',
      ];
      for (const name of names) await ctx.store.put(`${base}/${name}`, name);
      const prefixes = [
        '🔒',
        '🔒🔒',
        '🔓',
        'é',
        '\uFF5E',
        '\uD7FF',
        '\uE000',
        '\u{10FFFF}',
        '\u{10FFFF}\u{10FFFF}',
        '\u{10FFFE}',
        '\u{1F511}',
      ];
      for (const p of prefixes) {
        const prefix = `${base}/${p}`;
        const expected = names.filter((n) => n.startsWith(p)).length;
        expect(await ctx.store.count(prefix), `count(${JSON.stringify(prefix)})`).toBe(expected);
        expect((await scanAll(ctx.store, prefix)).length).toBe(expected);
      }
      expect(await ctx.store.count(`${base}/`)).toBe(names.length);
    });

    it('counts odd prefixes as data', async () => {
      const base = ctx.unique('count-odd');
      const keys = ODD_STRINGS.map((raw) => `${base}/${raw}`);
      await ctx.store.apply(keys.map((key): WriteOp => ({ op: 'put', key, value: 'v' })));
      for (const key of keys) {
        const expected = keys.filter((k) => k.startsWith(key)).length;
        expect(await ctx.store.count(key), `count(${JSON.stringify(key)})`).toBe(expected);
      }
      expect(await ctx.store.count(`${base}/`)).toBe(keys.length);
    });

    it('never counts deleted or expired records, however many other expired records wait for sweep', async () => {
      const base = ctx.unique('count-exp');
      const p = `${base}/p/`;
      // Start from a store with nothing expired left to sweep (other tests leave some behind).
      for (let i = 0; i < 1000; i++) {
        const swept = await ctx.store.sweep({ limit: 10_000 });
        if (swept.records === 0 && swept.leases === 0) break;
      }
      await putMany(ctx.store, p, 300);
      // Short ttls of 1.5 s: long enough that none expires before the first count on a busy
      // machine (150 ms did not, once, on etcd in a full CI run).
      await putMany(ctx.store, `${p}short/`, 5, 1_500);
      // A ttl record overwritten without one lives on; a record overwritten with a ttl expires.
      await ctx.store.put(`${p}renewed`, 'v', { ttlMs: 1_500 });
      await ctx.store.put(`${p}renewed`, 'v');
      await ctx.store.put(`${p}00000`, 'v', { ttlMs: 1_500 });
      await ctx.store.put(`${p}00001`, 'v', { ttlMs: 60_000 });
      expect(await ctx.store.delete(`${p}00002`)).toBe(true);
      expect(await ctx.store.apply([{ op: 'delete', key: `${p}00003` }])).toEqual([true]);
      expect(await ctx.store.count(p)).toBe(300 - 2 + 5 + 1);
      await sleep(1_700);
      // Few expired records in the store, many live ones under the prefix.
      expect(await ctx.store.count(p)).toBe(300 - 2 - 1 + 1);
      expect(await ctx.store.count(`${p}short/`)).toBe(0);
      expect(await ctx.store.count(`${p}0000`)).toBe(10 - 3);
      // Many more expired records elsewhere than live ones under the prefix.
      await putMany(ctx.store, `${base}/q/`, 400, 150);
      await sleep(300);
      expect(await ctx.store.count(p)).toBe(298);
      expect(await ctx.store.count(`${p}0000`)).toBe(7);
      expect(await ctx.store.count(`${base}/`)).toBe(298);
      expect(await ctx.store.count(`${base}/q/`)).toBe(0);
      expect(await ctx.store.count(`${p}short`)).toBe(0);
      // Sweeping changes nothing about what is counted.
      for (let i = 0; i < 1000; i++) {
        const swept = await ctx.store.sweep({ limit: 10_000 });
        if (swept.records === 0 && swept.leases === 0) break;
      }
      expect(await ctx.store.count(`${base}/`)).toBe(298);
    }, 60_000);

    it('counts 0 where nothing is stored, and every live record for the empty prefix', async () => {
      expect(await ctx.store.count(ctx.unique('count-none'))).toBe(0);
      const base = ctx.unique('count-all');
      await ctx.store.put(`${base}/1`, 'v');
      await ctx.store.delete(`${base}/1`);
      expect(await ctx.store.count(base)).toBe(0);
      // Records of earlier tests may expire meanwhile, never appear: scan, count, scan again.
      const before = (await scanAll(ctx.store, '')).length;
      const counted = await ctx.store.count('');
      const after = (await scanAll(ctx.store, '')).length;
      expect(counted).toBeLessThanOrEqual(before);
      expect(counted).toBeGreaterThanOrEqual(after);
      expect(counted).toBeGreaterThan(0);
    }, 60_000);

    it('refuses a prefix that is not a well-formed string without NUL, with INVALID_ARGUMENT', async () => {
      for (const bad of [42, null, undefined, 'p\u0000', 'p\ud800', '\udc00p']) {
        await expectCode(ctx.store.count(bad as string), 'INVALID_ARGUMENT');
      }
    });
  });
}
