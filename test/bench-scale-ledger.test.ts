import { describe, expect, it } from 'vitest';
import { Ledger } from '../bench/scale/ledger.js';

// bench:scale's ledger decides what a fan-out's figures count: the due schedules' first starts
// at T. A warm-up (`--warm`) fans out other schedules a minute before, in the same processes;
// their starts must be neither occurrences of T nor "unexpected".
describe('bench:scale ledger', () => {
  const T = 1_900_000_060_000;

  it('counts due first starts, duplicates and anything else apart', () => {
    const l = new Ledger(T, 2);
    l.add(1, 'u0', T, T + 10);
    l.add(2, 'u0', T, T + 20);
    l.add(2, 'u1', null, T + 30);
    l.add(1, 'u5', T - 60_000, T - 59_000);
    const s = l.summary();
    expect([s.started, s.duplicates, s.unexpected, s.max]).toEqual([2, 1, 1, 30]);
    expect(l.complete()).toBe(true);
  });

  it('counts the warm-up starts apart, and only those of its schedules at its instant', () => {
    const l = new Ledger(T, 2, { from: 10, count: 3, at: T - 60_000 });
    for (const id of ['u10', 'u11', 'u12']) l.add(1, id, T - 60_000, T - 59_500);
    l.add(2, 'u10', T - 60_000, T - 59_000); // a second start of a warm-up occurrence
    l.add(1, 'u13', T - 60_000, T - 59_000); // not of the warm-up: unexpected
    l.add(1, 'u11', T, T + 5); // a warm-up schedule at T: unexpected
    l.add(1, 'u0', T, T + 7);
    const s = l.summary();
    expect(l.warmStarted).toBe(3);
    expect([s.started, s.duplicates, s.unexpected]).toEqual([1, 1, 2]);
    expect(l.complete()).toBe(false);
  });
});
