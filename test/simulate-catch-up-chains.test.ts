/**
 * A stored schedule's catch-up chain after crashes: each replay's claim moves the schedule's
 * entry to the next missed fire time, and a step whose fire time prefers a node that had died —
 * still counted live for ~11 s, by its heartbeat — was read by every node and left lying until it
 * counted as stalled (two polls and a second; a node takes over another's entries from the far end
 * of what it read, and a chain's step is at the near end). One replay every ~4 s for a schedule
 * every 2 s: its last fire times unrun at the end (seed 123: `cu/cu1@+18 s`). Now the node whose
 * replay moved the entry to a missed fire time takes that step as its own (due/due-scan.ts,
 * `noteChainStep`): a chain runs one step at a time wherever its fire times would go.
 *
 * Seeds of `npm run sweep -- --jobs pages,rep,rl,ps,cu,shp,mc --faults sim`; over 1-400 of that
 * mix: 20 failing before, 4 after; `lim,rl,mc,pages` 0 → 1, mix5 and the busy mixes unchanged.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { SIM_RUN } from './fixtures/sim-faults.js';
import { SIM2_JOBS } from './fixtures/sim-jobs.js';

describe('catch-up chains after crashes (simulator, three nodes, sim faults)', () => {
  for (const seed of [123, 130]) {
    it(`seed ${seed}: every fire time of the chains ran or is on record`, async () => {
      const options: SimulateOptions = {
        ...SIM_RUN,
        seed,
        jobs: SIM2_JOBS,
      };
      const result = await simulate(options);
      expect(result.violations, formatReport(options, result)).toEqual([]);
    });
  }
});
