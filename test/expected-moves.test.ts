import { describe, expect, it } from 'vitest';
import { ExpectedMoves } from '../src/scheduler/due/expected-moves.js';

const none = new Set<string>();

describe('ExpectedMoves (the due index expects moved entries)', () => {
  it('gives the earliest expected time, also after an earlier expectation is replaced by a later one', () => {
    const m = new ExpectedMoves();
    expect(m.earliest(none)).toBe(Number.POSITIVE_INFINITY);
    m.expect('a', 5_000);
    m.expect('b', 3_000);
    m.expect('c', 4_000);
    expect(m.earliest(none)).toBe(3_000);
    // b's entry moved on again: its later time replaces 3,000, so c's 4,000 is the earliest now.
    m.expect('b', 9_000);
    expect(m.earliest(none)).toBe(4_000);
    m.expect('c', 1_000);
    expect(m.earliest(none)).toBe(1_000);
  });

  it('leaves out paused schedules', () => {
    const m = new ExpectedMoves();
    m.expect('a', 1_000);
    m.expect('b', 2_000);
    expect(m.earliest(new Set(['a']))).toBe(2_000);
    expect(m.earliest(new Set(['a', 'b']))).toBe(Number.POSITIVE_INFINITY);
    expect(m.earliest(none)).toBe(1_000);
  });

  it('a read drops what it met; an expectation not met is looked for a poll later, three times at most', () => {
    const m = new ExpectedMoves();
    m.expect('a', 1_000);
    m.expect('b', 1_500);
    m.expect('c', 60_000);
    m.sweep(new Set(['a']), 2_000, 1_000);
    // a met; b unmet: again at now + poll.
    expect(m.earliest(none)).toBe(3_000);
    m.sweep(none, 3_000, 1_000);
    m.sweep(none, 4_000, 1_000);
    expect(m.earliest(none)).toBe(5_000);
    m.sweep(none, 5_000, 1_000);
    // b given up after its fourth miss: c is what is left.
    expect(m.earliest(none)).toBe(60_000);
  });
});
