import { describe, expect, it } from 'vitest';
import { ExpiringKeys } from '../src/core/expiring-keys.js';

describe('ExpiringKeys', () => {
  it('holds a key until its time, not at or after it', () => {
    const k = new ExpiringKeys(10);
    k.hold('a', 1_000, 0);
    expect(k.holds('a', 999)).toBe(true);
    expect(k.holds('a', 1_000)).toBe(false);
    expect(k.holds('b', 0)).toBe(false);
  });

  it('prunes expired keys from the front when it holds another', () => {
    const k = new ExpiringKeys(10);
    k.hold('a', 100, 0);
    k.hold('b', 200, 0);
    k.hold('c', 300, 150);
    expect(k.size).toBe(2);
    expect(k.holds('b', 150)).toBe(true);
  });

  it('never holds more than its bound: the oldest go first, held or not', () => {
    const k = new ExpiringKeys(3);
    for (let i = 0; i < 5; i++) k.hold(`k${i}`, 10_000, 0);
    expect(k.size).toBe(3);
    expect(k.holds('k0', 0)).toBe(false);
    expect(k.holds('k1', 0)).toBe(false);
    expect(k.holds('k4', 0)).toBe(true);
  });

  it('a key held again keeps its place with the new time', () => {
    const k = new ExpiringKeys(10);
    k.hold('a', 100, 0);
    k.hold('a', 500, 0);
    expect(k.holds('a', 400)).toBe(true);
    expect(k.size).toBe(1);
  });
});
