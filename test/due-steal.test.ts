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

  it('a read that failed on the way forgets what it met first, and the next whole read starts from what was', () => {
    const stalls = new Stalls();
    read(stalls, ['a', 'b'], 10_000);
    stalls.readStart();
    stalls.met('a', 10_100, POLL);
    stalls.met('c', 10_100, POLL);
    // (no readDone) — then a read that resumed after 'b' and met nothing: 'a' and 'b' before it
    stalls.readStart();
    stalls.readDone('b');
    expect(read(stalls, ['a', 'b', 'c'], 10_000 + stalledAfter(POLL))).toEqual(['a', 'b']);
    // 'c' counts from its first whole read, not from the failed one (then it would be stalled here)
    expect(read(stalls, ['c'], 10_100 + stalledAfter(POLL))).toEqual([]);
  });

  it('agrees with a map rebuilt at every read, over random reads, stretches and failures', () => {
    // The plain form of the rule (how Stalls kept it until 2026-12-06): every read builds a new
    // map of what it met, with their first times, and carries over what it did not look at.
    class Plain {
      since = new Map<string, number>();
      next = new Map<string, number>();
      met(key: string, now: number): boolean {
        const first = this.since.get(key) ?? now;
        this.next.set(key, first);
        return first <= now - stalledAfter(POLL);
      }
      readStart(): void {
        this.next = new Map();
      }
      readDone(from?: string, to?: string): void {
        for (const [key, first] of this.since)
          if (!this.next.has(key) && ((from !== undefined && key <= from) || (to !== undefined && key > to)))
            this.next.set(key, first);
        this.since = this.next;
        this.next = new Map();
      }
    }
    let r = 11;
    const rand = (n: number) => {
      r = (r * 1_103_515_245 + 12_345) % 2_147_483_648;
      return r % n;
    };
    const key = (i: number) => `due|${String(i).padStart(3, '0')}`;
    const stalls = new Stalls();
    const plain = new Plain();
    let now = 10_000;
    let stalled = 0;
    for (let step = 0; step < 3_000; step++) {
      now += rand(400);
      const from = rand(3) === 0 ? undefined : rand(60);
      const to = rand(3) === 0 ? undefined : (from ?? 0) + rand(40);
      stalls.readStart();
      plain.readStart();
      const meets = new Set<number>();
      for (let i = 0; i < 12; i++) meets.add((from ?? -1) + 1 + rand(45));
      for (const i of [...meets].sort((a, b) => a - b)) {
        if (to !== undefined && i > to) break;
        const got = stalls.met(key(i), now, POLL);
        expect(got, `step ${step}, ${key(i)}`).toBe(plain.met(key(i), now));
        if (got) stalled++;
      }
      if (rand(10) === 0) continue; // the read failed on the way
      const f = from === undefined ? undefined : key(from);
      const t = to === undefined ? undefined : key(to);
      stalls.readDone(f, t);
      plain.readDone(f, t);
    }
    // The run met stalled entries and fresh ones alike (a test that never stalls proves nothing).
    expect(stalled).toBeGreaterThan(500);
  });

  it('wait two polls and a second', () => {
    expect(stalledAfter(200)).toBe(1_400);
    expect(stalledAfter(1_000)).toBe(3_000);
  });
});
