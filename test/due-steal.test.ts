/**
 * Entries of another live node's share that it leaves lying (due/due-scan.ts, `Stalls`): met past
 * their grace by this node's reads for `stalledAfter(pollMs)`, they are taken as this node's own.
 * The outside view of it is test/simulate-stalled-share.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { Stalls, stalledAfter } from '../src/scheduler/due/due-scan.js';

const POLL = 200;

/** One read meeting `keys` at store time `now`: which of them are stalled. */
function read(stalls: Stalls, keys: string[], now: number): string[] {
  stalls.readStart();
  const out = keys.filter((k) => stalls.met(k, now, POLL));
  stalls.readDone();
  return out;
}

describe("another live node's entries left lying", () => {
  it('are stalled once reads have met them for stalledAfter, not before', () => {
    const stalls = new Stalls();
    expect(read(stalls, ['a', 'b'], 10_000)).toEqual([]);
    expect(read(stalls, ['a', 'b', 'c'], 10_000 + stalledAfter(POLL) - 1)).toEqual([]);
    expect(read(stalls, ['a', 'b', 'c'], 10_000 + stalledAfter(POLL))).toEqual(['a', 'b']);
    expect(read(stalls, ['c'], 10_000 + 2 * stalledAfter(POLL))).toEqual(['c']);
  });

  it('are forgotten when a read does not meet them (taken, moved on): met again, they start over', () => {
    const stalls = new Stalls();
    read(stalls, ['a', 'b'], 10_000);
    read(stalls, ['b'], 10_100);
    expect(read(stalls, ['a', 'b'], 10_000 + stalledAfter(POLL))).toEqual(['b']);
  });

  it('a read that failed on the way leaves the last whole read as it was', () => {
    const stalls = new Stalls();
    read(stalls, ['a'], 10_000);
    stalls.readStart();
    stalls.met('z', 10_050, POLL);
    // (no readDone: the read threw)
    expect(read(stalls, ['a', 'z'], 10_000 + stalledAfter(POLL))).toEqual(['a']);
  });

  it('are kept when a read did not look where they are: resumed after them, or stopped before them', () => {
    const stalls = new Stalls();
    read(stalls, ['b', 'd', 'f'], 10_000);
    // Resumed after 'c' and stopped at 'e' (for want of slots): met nothing of b, d or f.
    stalls.readStart();
    stalls.readDone('c', 'e');
    // 'd' was looked for and not met: forgotten. 'b' (before) and 'f' (after) keep their time.
    expect(read(stalls, ['b', 'd', 'f'], 10_000 + stalledAfter(POLL))).toEqual(['b', 'f']);
  });

  it('wait two polls and a second', () => {
    expect(stalledAfter(200)).toBe(1_400);
    expect(stalledAfter(1_000)).toBe(3_000);
  });
});
