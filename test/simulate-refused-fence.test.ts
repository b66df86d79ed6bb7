/**
 * A node whose skip fence (due/skip-fence.ts) is refused watches every fire time it was refused,
 * as a refused claim is watched (claim/watch.ts). Two nodes judged the same missed fire times at
 * once: the first's fence claims were granted but its answer was lost, so it gave them back
 * unsaid (`forget`) and threw; the second, refused, took them for the first's to handle and went
 * on past them. Nobody handled them: mix5, seed 508 — `m5lim@+7 s` and `+8 s`, every shard, free
 * and below the mark of a later replay, never run and never said skipped (`lost-fire-time`). Now
 * the refused node looks again after the holder's lease and recovers what it finds free and not
 * on record.
 */
import { expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { MIX5_RUN } from './fixtures/sim-faults.js';
import { MIX5_JOBS } from './fixtures/sim-jobs.js';

it('fire times a refused skip fence left to a fence that gave them back are still run (mix5, seed 508)', async () => {
  const options: SimulateOptions = { ...MIX5_RUN, jobs: MIX5_JOBS, seed: 508 };
  const result = await simulate(options);
  expect(result.violations, formatReport(options, result)).toEqual([]);
  // Recovered: every shard of +7 s and +8 s started.
  const started = result.trace.filter((l) => / start +m5lim@\+[78]\.000s#\d/.test(l));
  expect(started.length).toBe(8);
}, 30_000);
