/**
 * A page's run of a rate-limited job that starts late after its claim asks the window for a start
 * of its own first (run/run.ts, fleet-limits.ts `rateStart`), and since rate-limited work waits in
 * line that can take seconds. The page's mark (run/invoked-mark.ts) showed such a run called with
 * the page's first run, and a later fire time of its schedule was skipped naming it before it
 * had started (`unjustified-skip`: rl/rl5@+6 s and +8 s named the run of +4 s, which started at
 * 11 s). Such a run is now marked apart, with its own call time (RunBook.callsLate).
 *
 * Seed of `npm run sweep -- --jobs lim,rl,mc,pages --faults sim`: the only failure of 1-400 once
 * rate-limited work waited in line; 0 of 400 with the fix.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { SIM_RUN } from './fixtures/sim-faults.js';
import { LIMITED, LIMITED_CATCH_UP, PAGED, RATE_LIMITED } from './fixtures/sim-jobs.js';

describe('a late rate-limited start of a page run (simulator, sim faults)', () => {
  it('seed 252: no fire time is skipped naming a run that had not started', async () => {
    const options: SimulateOptions = {
      ...SIM_RUN,
      seed: 252,
      jobs: [LIMITED, RATE_LIMITED, LIMITED_CATCH_UP, PAGED],
    };
    const result = await simulate(options);
    expect(result.violations, formatReport(options, result)).toEqual([]);
  });
});
