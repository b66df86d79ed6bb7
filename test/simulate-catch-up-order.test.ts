/**
 * Catch-up replays one missed fire time at a time, oldest first, across the fleet. Under overlap
 * `skip` a replay refused its gate (a replay before it still running) is given back and decided
 * again at a later tick; nodes that looked meanwhile found it held, took it for handled by its
 * holder and replayed the next one — which then took the gate as often as the given-back one did.
 * Mix5, seed 74: `tick` replayed +19 s, +20 s and +21 s while +18 s, given back at each try,
 * waited past the end of the run (`lost-fire-time`). Now a node that finds the latest held fire
 * time still to be settled (a claim, not a "done" hold) replays nothing until it is (due/
 * misfire.ts, `unclaimed`). Sweep `m5pages,tick,m5lim,m5q` mix5 1-800: 18 failing before, 13
 * after (the rest: the saturated tails of docs/simulator.md).
 */
import { expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { MIX5_RUN } from './fixtures/sim-faults.js';
import { MIX5_JOBS } from './fixtures/sim-jobs.js';

it('catch-up under overlap skip replays oldest first across four nodes, and none is left behind (mix5, seeds 74, 80, 153)', async () => {
  for (const seed of [74, 80, 153]) {
    const options: SimulateOptions = { ...MIX5_RUN, jobs: MIX5_JOBS, seed };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
    // The replays of `tick` (source misfire) started in fire-time order.
    const replays = result.trace
      .filter((l) => / start +tick@\+[\d.]+s .*source=misfire/.test(l))
      .map((l) => Number(/tick@\+([\d.]+)s/.exec(l)![1]));
    expect(replays.length, `seed ${seed}`).toBeGreaterThan(3);
    expect(replays, `seed ${seed}: replays in the order they started`).toEqual(
      [...replays].sort((a, b) => a - b),
    );
  }
}, 30_000);
