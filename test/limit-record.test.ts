/**
 * The arithmetic of a limited job's record (src/scheduler/run/limit-record.ts): what a
 * reservation may take given the other nodes' permits and the starts of the last window.
 */
import { describe, expect, it } from 'vitest';
import { type LimitRecord, reserveIn } from '../src/scheduler/run/limit-record.js';

const conc = (n: number) => ({ maxConcurrency: n, rate: undefined });
const rate = (max: number, perMs: number) => ({ maxConcurrency: undefined, rate: { max, perMs } });

describe('fleet limit record', () => {
  it('grants what the other live nodes leave of maxConcurrency; a lapsed entry counts no more', () => {
    const rec: LimitRecord = { n: { a: [3, 2_000], b: [4, 900], me: [1, 5_000] } };
    // b lapsed at 900: only a's 3 and my 2 count.
    expect(reserveIn(rec, 1_000, 'me', conc(10), 2, 9)).toMatchObject({ granted: 5, retryAt: undefined });
    expect(rec.n.b).toBeUndefined();
    expect(reserveIn({ n: { a: [10, 2_000] } }, 1_000, 'me', conc(10), 0, 3).granted).toBe(0);
    // More in use than allowed (a recovery ran beside): nothing, never a negative grant.
    expect(reserveIn({ n: { a: [12, 2_000] } }, 1_000, 'me', conc(10), 0, 3).granted).toBe(0);
  });

  it('rate: at most max grants in any window of per, then room as the oldest leave it', () => {
    const rec: LimitRecord = { n: {} };
    const r = rate(5, 1_000);
    expect(reserveIn(rec, 0, 'me', r, 0, 3).granted).toBe(3);
    expect(reserveIn(rec, 400, 'me', r, 0, 3)).toMatchObject({ granted: 2, retryAt: 1_000 });
    expect(reserveIn(rec, 999, 'me', r, 0, 1)).toMatchObject({ granted: 0, retryAt: 1_000 });
    // At 1,000 the three of 0 left the window; the two of 400 are still in it.
    expect(reserveIn(rec, 1_000, 'me', r, 0, 10)).toMatchObject({ granted: 3, retryAt: 1_400 });
    expect(rec.s).toEqual([
      [400, 2],
      [1_000, 3],
    ]);
  });

  it('rate: merged buckets keep every start counted at least until its window ends', () => {
    const rec: LimitRecord = { n: {} };
    const r = rate(1_000, 10_000);
    // 100 grants of one, 10 ms apart: more than the 64 buckets kept.
    for (let t = 0; t < 1_000; t += 10) expect(reserveIn(rec, t, 'me', r, 0, 1).granted).toBe(1);
    expect(rec.s!.length).toBeLessThanOrEqual(64);
    expect(rec.s!.reduce((n, [, c]) => n + c, 0)).toBe(100);
    // Never fewer than the true count in any later window (merging only moves a start later).
    for (const now of [5_000, 9_995, 10_005, 10_500]) {
      const truth = Array.from({ length: 100 }, (_, i) => i * 10).filter((t) => t > now - 10_000).length;
      const kept = rec.s!.filter(([at]) => at > now - 10_000).reduce((n, [, c]) => n + c, 0);
      expect(kept).toBeGreaterThanOrEqual(truth);
    }
  });

  it('rate across nodes whose clock estimates differ by their error bounds: a start counts a whole window of true time', () => {
    const rec: LimitRecord = { n: {} };
    const r = rate(1, 1_000);
    // Node a at true time 0, its estimate 100 behind (bound 100): stamped with the latest, 0.
    expect(reserveIn(rec, -100, 'a', r, 0, 1, 100)).toMatchObject({ granted: 1, at: 0 });
    // Node b 100 ahead (bound 100): at true time 900 it reads 1,000 — still in a's window.
    expect(reserveIn(rec, 1_000, 'b', r, 0, 1, 100)).toMatchObject({ granted: 0, retryAt: 1_200 });
    // At true time 1,000 (b reads 1,100) a's start has left the window.
    expect(reserveIn(rec, 1_100, 'b', r, 0, 1, 100).granted).toBe(1);
  });

  it('both limits: the tighter one holds', () => {
    const rec: LimitRecord = { n: { a: [1, 9_999] } };
    const both = { maxConcurrency: 3, rate: { max: 10, perMs: 1_000 } };
    expect(reserveIn(rec, 0, 'me', both, 0, 5).granted).toBe(2);
    expect(rec.s).toEqual([[0, 2]]);
  });

  it('order: newer work yields to an older place in line; the oldest place takes what frees up', () => {
    const t = (s: number) => s * 1_000;
    // maxConcurrency 2, both permits held by a; b waits in line from 17 s, c from 23 s.
    const rec: LimitRecord = { n: { a: [2, t(60)] }, w: { b: [t(17), t(31)], c: [t(23), t(31)] } };
    expect(reserveIn(rec, t(30), 'b', conc(2), 0, 2, 0, [t(17), t(18)]).granted).toBe(0);
    // a's runs end: a's newer work (25 s) yields, and so does c's (23 s, behind b's 17 s).
    rec.n = {};
    expect(reserveIn(rec, t(30), 'a', conc(2), 0, 1, 0, [t(25)]).granted).toBe(0);
    expect(reserveIn(rec, t(30), 'c', conc(2), 0, 1, 0, [t(23)]).granted).toBe(0);
    expect(reserveIn(rec, t(30), 'b', conc(2), 0, 2, 0, [t(17), t(18)]).granted).toBe(2);
    // Work as old as the oldest place competes as before (one occurrence's shards); older work is
    // granted: only the newer part of a reservation yields.
    const near: LimitRecord = { n: {}, w: { b: [t(17), t(31)] } };
    expect(reserveIn(near, t(30), 'c', conc(5), 0, 3, 0, [t(16), t(17), t(17) + 1]).granted).toBe(2);
    // The node's own place counts for its order (an estimate that can be newer than what waits).
    const own: LimitRecord = { n: {}, w: { b: [t(17), t(31)], me: [t(12), t(31)] } };
    expect(reserveIn(own, t(30), 'me', conc(5), 0, 3, 0, [t(20), t(21), t(22)]).granted).toBe(3);
    // Without an order nothing yields.
    expect(reserveIn(near, t(30), 'd', conc(9), 0, 2).granted).toBe(2);
  });

  it("order, local: a node's due work yields to its own retry waiting for the rate window", () => {
    const t = (s: number) => s * 1_000;
    const rate = { maxConcurrency: undefined, rate: { max: 5, perMs: 1_000 } };
    // me's stored place is its retry's (6 s), b waits from 9 s; me's due tick asks for 8 s, 10 s.
    const rec = (): LimitRecord => ({ n: {}, w: { me: [t(6), t(31)], b: [t(9), t(31)] } });
    // On the stored place's strength the tick would take all; as its own place (8 s) with the
    // retry ahead, it yields to the retry (and 10 s to b's 9 s).
    expect(reserveIn(rec(), t(30), 'me', rate, 0, 2, 0, [t(8), t(10)]).granted).toBe(2);
    const local = { own: t(8), ahead: t(6) };
    expect(reserveIn(rec(), t(30), 'me', rate, 0, 2, 0, [t(8), t(10)], local).granted).toBe(0);
    // Nothing else of me's waits: its own place (8 s) is older than b's, its whole order goes.
    expect(
      reserveIn(rec(), t(30), 'me', rate, 0, 2, 0, [t(8), t(10)], { own: t(8), ahead: undefined }).granted,
    ).toBe(2);
    // The retry itself (6 s, no older work here) is first in line.
    expect(
      reserveIn(rec(), t(30), 'me', rate, 0, 1, 0, [t(6)], { own: t(6), ahead: undefined }).granted,
    ).toBe(1);
  });

  it('order: a place holds newer work back only until it lapses, and a lapsed one is pruned', () => {
    const rec: LimitRecord = { n: {}, w: { dead: [10_000, 32_000], me: [40_000, 31_500] } };
    expect(reserveIn(rec, 31_999, 'me', conc(4), 0, 1, 0, [50_000]).granted).toBe(0);
    expect(reserveIn(rec, 32_000, 'me', conc(4), 0, 1, 0, [50_000]).granted).toBe(1);
    // Only other nodes' places are pruned here: a node writes its own (fleet-limits.ts).
    expect(rec.w).toEqual({ me: [40_000, 31_500] });
    // Judged by the earliest the true time can be (the estimate's error bound).
    const rl: LimitRecord = { n: {}, w: { b: [5_000, 31_000] } };
    expect(reserveIn(rl, 31_050, 'me', conc(1), 0, 1, 100, [9_000]).granted).toBe(0);
  });
});
