/**
 * A node's place in line for a limited job's permits (src/scheduler/run/limit-place.ts): which
 * place stands for the node, and when it is worth a write of the job's record.
 */
import { describe, expect, it } from 'vitest';
import { LimitPlace } from '../src/scheduler/run/limit-place.js';
import { type LimitRecord, WAIT_HOLD_MS } from '../src/scheduler/run/limit-record.js';

describe('limit place', () => {
  it('the earliest live place of its paths stands for the node', () => {
    const p = new LimitPlace();
    p.set('tick', 10_000, 20_000);
    expect(p.current(10_500)).toEqual([10_000, 20_000]);
    p.set('admit', 8_000, 12_000);
    expect(p.current(12_000 - 1)).toEqual([8_000, 12_000]);
    // The admit path's place lapsed: the tick's stands again.
    expect(p.current(12_000)).toEqual([10_000, 20_000]);
    expect(p.set('tick', undefined, 0)).toBe(true);
    expect(p.current(12_000)).toBeUndefined();
    expect(p.set('tick', undefined, 0)).toBe(false);
  });

  it('is written when older than the stored one or none is; a newer or no place is left to lapse', () => {
    const p = new LimitPlace();
    const rec: LimitRecord = { n: {} };
    p.set('tick', 5_000, 9_000);
    let put = p.into(rec, 'me', 7_000);
    expect(put.same).toBe(false);
    expect(rec.w).toEqual({ me: [5_000, 9_000] });
    put.stored(true);
    expect(p.moved(7_100)).toBe(false);
    // The work moved on to newer work: the stored (older) place serves until it lapses.
    p.set('tick', 6_000, 10_000);
    expect(p.moved(7_200)).toBe(false);
    expect(p.into({ n: {}, w: { me: [5_000, 9_000] } }, 'me', 7_200).same).toBe(true);
    // Older work waits now: written.
    p.set('tick', 4_000, 10_000);
    expect(p.moved(7_300)).toBe(true);
    // The same place about to lapse while it stands is held (written again).
    put = p.into({ n: {}, w: { me: [4_000, 7_400 + WAIT_HOLD_MS / 2 - 1] } }, 'me', 7_400);
    expect(put.same).toBe(false);
    // Nothing waits: no write for that alone; a write made anyway takes the place out.
    p.set('tick', undefined, 0);
    const anyway: LimitRecord = { n: {}, w: { me: [4_000, 9_000], other: [3_000, 9_000] } };
    expect(p.into(anyway, 'me', 7_500).same).toBe(true);
    expect(anyway.w).toEqual({ other: [3_000, 9_000] });
  });
});
