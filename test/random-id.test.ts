import { describe, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';

describe('randomId', () => {
  it('gives url-safe ids of the asked length, distinct across many pool refills', () => {
    const seen = new Set<string>();
    // 9 bytes each: ~455 ids per 4 KiB pool, so this crosses ~220 refills, at uneven offsets too.
    for (let i = 0; i < 100_000; i++) {
      const id = randomId(i % 7 === 0 ? 3 : 9);
      expect(id).toMatch(i % 7 === 0 ? /^[A-Za-z0-9_-]{4}$/ : /^[A-Za-z0-9_-]{12}$/);
      if (i % 7 !== 0) seen.add(id);
    }
    expect(seen.size).toBe(100_000 - Math.ceil(100_000 / 7));
  });

  it('spreads its bytes: every base64url character shows up at every position', () => {
    const at = Array.from({ length: 12 }, () => new Set<string>());
    for (let i = 0; i < 5_000; i++) {
      const id = randomId(9);
      for (let k = 0; k < id.length; k++) at[k]!.add(id[k]!);
    }
    for (const chars of at) expect(chars.size).toBe(64);
  });

  it('refuses more bytes than its pool holds', () => {
    expect(() => randomId(5_000)).toThrow(RangeError);
  });
});
