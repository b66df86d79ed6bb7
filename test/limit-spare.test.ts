/**
 * A permit freed by a run's end stays on its node for that node's waiting work when the node is
 * first in line (src/scheduler/run/limit-spare.ts): counted in the node's entry all along (the
 * fleet never runs more than `maxConcurrency`), given to the next reservation without a write,
 * and gone after SPARE_MS or when another node waits longer.
 */
import { describe, expect, it } from 'vitest';
import { jobSpec } from '../src/scheduler/job-options.js';
import { inUse, newLocal } from '../src/scheduler/run/limit-local.js';
import { keepSpare, SPARE_MS, takeSpare } from '../src/scheduler/run/limit-spare.js';

const NOW = 1_900_000_010_000;
const capped = () => jobSpec('capped', { maxConcurrency: 2 }, { pages: true });

/** A node `a` with one run going and work waiting from `start`, and the line as last read. */
function waiting(start: number, line: Record<string, [number, number]> = {}) {
  const l = newLocal(capped());
  l.held = 1;
  l.place.set('tick', start, NOW + 1_000);
  l.line = line;
  return l;
}

describe('spare permits', () => {
  it('a run ends with work waiting here first in line: its permit stays, counted, for the next reservation', () => {
    const l = waiting(NOW - 3_000, { b: [NOW - 3_000, NOW + 900] });
    l.held = 0; // the run ended (FleetLimits.ended takes it out of `held` first)
    expect(keepSpare(l, 'a', NOW, 100)).toBe(true);
    expect(inUse(l, 101)).toBe(1);
    expect(takeSpare(l, 'a', 3, NOW - 3_000, NOW, 110)).toBe(1);
    expect(l.reserved).toBe(1);
    expect(inUse(l, 111)).toBe(1);
    expect(takeSpare(l, 'a', 3, NOW - 3_000, NOW, 111)).toBe(0);
  });

  it('another node waiting longer gets it: not kept', () => {
    const l = waiting(NOW - 3_000, { b: [NOW - 4_000, NOW + 900] });
    l.held = 0;
    expect(keepSpare(l, 'a', NOW, 100)).toBe(false);
    expect(inUse(l, 101)).toBe(0);
  });

  it('a place in line that lapsed does not count', () => {
    const l = waiting(NOW - 3_000, { b: [NOW - 4_000, NOW - 1] });
    l.held = 0;
    expect(keepSpare(l, 'a', NOW, 100)).toBe(true);
  });

  it('nothing waiting here: not kept', () => {
    const l = newLocal(capped());
    expect(keepSpare(l, 'a', NOW, 100)).toBe(false);
  });

  it('lapses after SPARE_MS: no longer counted, not given', () => {
    const l = waiting(NOW - 3_000);
    l.held = 0;
    expect(keepSpare(l, 'a', NOW, 100)).toBe(true);
    expect(inUse(l, 100 + SPARE_MS)).toBe(0);
    expect(takeSpare(l, 'a', 1, NOW - 3_000, NOW, 100 + SPARE_MS)).toBe(0);
    expect(l.spare).toBe(0);
  });

  it('a reservation for work not first in line drops the spare (it goes back with the write)', () => {
    const l = waiting(NOW - 3_000, { b: [NOW - 2_000, NOW + 900] });
    l.held = 0;
    expect(keepSpare(l, 'a', NOW, 100)).toBe(true);
    expect(takeSpare(l, 'a', 1, NOW - 1_000, NOW, 110)).toBe(0);
    expect(inUse(l, 111)).toBe(0);
  });

  it('not under a rate limit: its window counts each start', () => {
    const l = newLocal(
      jobSpec('rated', { maxConcurrency: 2, rateLimit: { max: 5, per: '1s' } }, { pages: true }),
    );
    l.place.set('tick', NOW - 3_000, NOW + 1_000);
    expect(keepSpare(l, 'a', NOW, 100)).toBe(false);
  });
});
