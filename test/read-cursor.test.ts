/**
 * Where a node's next read of the due index begins (src/scheduler/due/read-cursor.ts): after the
 * key a stopped read took last, except when this node moved an entry behind it, when what is read
 * changed, and at least once per `fullEveryMs` — the saturated-fleet case is judged end to end in
 * simulate-saturated-reads.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ReadCursor } from '../src/scheduler/due/read-cursor.js';
import { keys } from '../src/scheduler/keys.js';

const key = (at: number) => keys.dueEntry(at, 'user-1', 'v1');

describe('ReadCursor', () => {
  it('goes on after the last key of a stopped read, and from the first key after a read that ended', () => {
    const c = new ReadCursor(10_000);
    expect(c.begin(1_000, false)).toBeUndefined();
    c.stoppedAt(key(5_000));
    expect(c.begin(1_200, false)).toBe(key(5_000));
    c.stoppedAt(undefined);
    expect(c.begin(1_400, false)).toBeUndefined();
  });

  it('begins at the first key when this node moved an entry to a start at or behind the key', () => {
    const c = new ReadCursor(10_000);
    c.begin(1_000, false);
    c.stoppedAt(key(5_000));
    c.movedTo(5_001);
    expect(c.begin(1_100, false)).toBe(key(5_000));
    c.movedTo(5_000);
    expect(c.begin(1_200, false)).toBeUndefined();
    c.stoppedAt(key(5_000));
    c.movedTo(2_000);
    expect(c.begin(1_300, false)).toBeUndefined();
  });

  it('begins at the first key when what is read changed, and at least every fullEveryMs', () => {
    const c = new ReadCursor(10_000);
    c.begin(0, false);
    c.stoppedAt(key(5_000));
    expect(c.begin(100, true)).toBeUndefined();
    c.stoppedAt(key(6_000));
    expect(c.begin(9_000, false)).toBe(key(6_000));
    c.stoppedAt(key(7_000));
    // The last read from the first key was at 100.
    expect(c.begin(10_100, false)).toBeUndefined();
    c.stoppedAt(key(8_000));
    expect(c.begin(10_200, false)).toBe(key(8_000));
  });
});
