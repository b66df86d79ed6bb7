/**
 * The memory store's sorted keys (src/store/memory-keys.ts) against the order scans had before
 * them: every key filtered by prefix and `after`, sorted by `compareKeys`. Keys and prefixes are
 * drawn from code points at the edges of the order (the surrogate gap, U+FFFF, U+10FFFF), where a
 * prefix's upper end is easy to get wrong.
 */
import { expect, it } from 'vitest';
import { SortedKeys } from '../src/store/memory-keys.js';
import { compareKeys } from '../src/store/validate.js';

const POINTS = [0x41, 0x42, 0x7c, 0xd7ff, 0xe000, 0xffff, 0x10000, 0x10ffff];

function randomText(random: () => number, max: number): string {
  const n = Math.floor(random() * (max + 1));
  return String.fromCodePoint(
    ...Array.from({ length: n }, () => POINTS[Math.floor(random() * POINTS.length)]!),
  );
}

function reference(keys: Set<string>, prefix: string, after: string | undefined, reverse: boolean): string[] {
  const d = reverse ? -1 : 1;
  return [...keys]
    .filter((k) => k.startsWith(prefix) && (after === undefined || compareKeys(k, after) * d > 0))
    .sort((a, b) => compareKeys(a, b) * d);
}

it('walks a prefix from `after` in either direction exactly as filtering and sorting every key does', () => {
  let seed = 7;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const sorted = new SortedKeys();
  const keys = new Set<string>();
  for (let round = 0; round < 300; round++) {
    // Adds and deletes, so the tree's shape changes between looks.
    for (let i = 0; i < 20; i++) {
      const key = `k${randomText(random, 4)}`;
      if (random() < 0.25) {
        sorted.delete(key);
        keys.delete(key);
      } else {
        sorted.add(key);
        keys.add(key);
      }
    }
    const prefix = random() < 0.1 ? '' : `k${randomText(random, 2)}`;
    const after = random() < 0.4 ? undefined : `k${randomText(random, 4)}`;
    for (const reverse of [false, true])
      expect(
        [...sorted.range(prefix, after, reverse)],
        `prefix ${JSON.stringify(prefix)} after ${JSON.stringify(after)}`,
      ).toEqual(reference(keys, prefix, after, reverse));
  }
});
