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

  it('agrees with a walk over every expectation through random expects, cancels, pauses and sweeps', () => {
    // The plain model: a map walked at every question (what the heap replaced).
    for (let seed = 1; seed <= 20; seed++) {
      let r = seed;
      const rand = (n: number) => {
        r = (r * 1_103_515_245 + 12_345) % 2_147_483_648;
        return r % n;
      };
      const model = new Map<string, { at: number; tries: number }>();
      const m = new ExpectedMoves();
      let now = 0;
      for (let step = 0; step < 2_000; step++) {
        const id = `s${rand(60)}`;
        const op = rand(10);
        if (op < 5) {
          const at = now + rand(5_000);
          model.set(id, { at, tries: 0 });
          m.expect(id, at);
        } else if (op < 6) {
          model.delete(id);
          m.cancel(id);
        } else if (op < 8) {
          now += rand(1_500);
          const seen = new Set(Array.from({ length: rand(8) }, () => `s${rand(60)}`));
          for (const [k, x] of model) {
            if (seen.has(k) || (x.at <= now && ++x.tries > 3)) model.delete(k);
            else if (x.at <= now) x.at = now + 1_000;
          }
          m.sweep(seen, now, 1_000);
        }
        const paused = new Set(Array.from({ length: rand(3) === 0 ? rand(30) : 0 }, () => `s${rand(60)}`));
        let want = Number.POSITIVE_INFINITY;
        for (const [k, x] of model) if (!paused.has(k)) want = Math.min(want, x.at);
        expect(m.earliest(paused), `seed ${seed}, step ${step}`).toBe(want);
        expect(m.size).toBe(model.size);
      }
    }
  });
});
