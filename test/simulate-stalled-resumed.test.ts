/**
 * An entry lying at a live node that is stuck (its ticks waiting out store calls whose replies
 * were lost) is taken over by another node once that node's reads have met it for two polls and a
 * second (due/due-scan.ts, `Stalls`). A read that resumed after the last one's cursor, or stopped
 * for want of slots, does not look at every key — and it used to forget every entry it did not
 * meet, so an entry met from 5.4 s was forgotten at 8.7 s by a read that resumed past it and never
 * counted as stalled while its node stayed stuck (to 12 s): `mc/mc0@+4 s` (6 stored schedules every
 * 2 s under `maxConcurrency: 3` and catch-up) ran at 15.7 s, and its chain never caught up —
 * `+14..+18 s` unrun at the end. Now a read forgets only what it looked for.
 *
 * Seed of `npm run sweep -- --jobs pages,rep,rl,ps,cu,shp,mc --faults sim`: over 1-400 of that mix
 * 2 failing before, 1 after; `lim,rl,mc,pages` 1-400 1 → 0; mix5 (401-900: 18 → 18), the busy
 * mixes and the slow-machine workload unchanged.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { SIM_RUN } from './fixtures/sim-faults.js';
import { SIM2_JOBS } from './fixtures/sim-jobs.js';

describe('an entry left lying by a stuck node, met by reads that resume (simulator, sim faults)', () => {
  it('seed 301: every fire time ran or is on record', async () => {
    const options: SimulateOptions = {
      ...SIM_RUN,
      seed: 301,
      jobs: SIM2_JOBS,
    };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
  });
});
