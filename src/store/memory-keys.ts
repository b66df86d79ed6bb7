import { createRequire } from 'node:module';
import { compareKeys } from './validate.js';

// A CommonJS package whose class is its `default` export: required, so that Node's and a
// bundler's ESM interop cannot disagree on what a default import is.
const { default: BTree } = createRequire(import.meta.url)('sorted-btree') as typeof import('sorted-btree');

/**
 * The memory store's keys in store order (code point order, `compareKeys`), in a B+ tree
 * (sorted-btree): a scan walks only the keys of its prefix, from where it starts. Before, every
 * scan filtered every record and sorted the matches, so a scan of 64 due entries among 120,000
 * records cost as much as sorting them all: a fan-out of 30,000 stored schedules spent 65 % of its
 * CPU there (8.4 s to start them all; SQLite: 1.7 s).
 */
export class SortedKeys {
  private readonly tree = new BTree<string, undefined>(undefined, compareKeys);

  add(key: string): void {
    this.tree.set(key, undefined, false);
  }

  delete(key: string): void {
    this.tree.delete(key);
  }

  /**
   * The keys that start with `prefix`, ascending from after `after` (or from the first), or with
   * `reverse` descending from before `after` (or from the last).
   */
  *range(prefix: string, after: string | undefined, reverse: boolean): Generator<string> {
    if (!reverse) {
      const low = after !== undefined && compareKeys(after, prefix) > 0 ? after : prefix;
      for (const key of this.tree.keys(low)) {
        if (key === after) continue;
        if (!key.startsWith(prefix)) return;
        yield key;
      }
      return;
    }
    const end = prefixEnd(prefix);
    const high = after !== undefined && (end === undefined || compareKeys(after, end) < 0) ? after : end;
    // Every key of the prefix is below `end` and every key in [prefix, end) has the prefix, so the
    // first key without it is below them all; `after` itself is not returned (skipHighest).
    for (const [key] of this.tree.entriesReversed(high, undefined, high !== undefined)) {
      if (!key.startsWith(prefix)) return;
      yield key;
    }
  }
}

/**
 * The first key above every key that starts with `prefix` in code point order: `prefix` with its
 * last code point raised by one (a last code point at the top of the range drops, and the one
 * before it is raised); `undefined` when there is none (empty prefix, or every code point at the top).
 */
function prefixEnd(prefix: string): string | undefined {
  const points = [...prefix].map((c) => c.codePointAt(0)!);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last < 0x10ffff) {
      // Past the surrogate range: code point order has no key there.
      points.push(last === 0xd7ff ? 0xe000 : last + 1);
      return String.fromCodePoint(...points);
    }
  }
  return undefined;
}
