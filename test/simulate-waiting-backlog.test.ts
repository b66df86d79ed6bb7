/**
 * Fire times that wait behind their gate (no run of the gate had started by their fire time: the
 * holder was a claim whose reply was lost, a frozen node, a misfire replay) under a fleet that is
 * busy most of the time: three nodes, a job every second whose runs take 50-1500 ms, stored
 * schedules every second under overlap `queue`, a page-claimed job beside them, lost replies and
 * requests, stalls, drift and two crashes. The simulator's checker: every fire time ran once or
 * is on record with a reason that holds, no two runs of a gate at once, every run that started
 * finished or was recovered.
 *
 * - Seeds 89 and 100: skip@+13 s and +14 s (89), +14 s and +15 s (100) waited behind their gate
 *   to the end. The gate freed between a run's end and the claim of what waited, and each time
 *   the next on-time claim, which asks for the occurrence and the gate at once, won it. An
 *   on-time claim now yields its gate to an older fire time still waiting (Overlap.behindOlder).
 * - Seed 43: with a first version of that fix, the on-time claims still asked for the gate with
 *   their occurrence and gave it back: the waiting fire time's claim, refused in that moment,
 *   waited for the next poll, and +15 s never ran. A claim that knows of an older waiting fire
 *   time now asks for the gate only if that one ran meanwhile (Overlap.yieldsGate).
 * - Seed 90: a queued stored schedule's misfire replay (pq/q4@+5 s) started and lost its lease at
 *   once; another node, whose due read predated that start, then won the occurrence and settled
 *   it "done" as a missed fire time, so recovery passed over the dead run for the whole hold
 *   (`unfinished`). A misfire's settle now goes ahead only if its due entry is still where its
 *   node read it (claim/entry-moved.ts): the dead run's start had moved it.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';
import { BUSY_RUN } from './fixtures/sim-faults.js';

function busy(seed: number): SimulateOptions {
  return {
    seed,
    ...BUSY_RUN,
    jobs: [
      {
        name: 'pages',
        options: { lockAtMostFor: '3s' },
        runMs: [50, 1500],
        schedules: Array.from({ length: 20 }, (_, i) => ({ id: `p${i}`, every: i % 2 ? '1s' : '2s' })),
      },
      {
        name: 'pq',
        options: { lockAtMostFor: '3s', overlap: 'queue' },
        runMs: [50, 1200],
        schedules: Array.from({ length: 6 }, (_, i) => ({ id: `q${i}`, every: '1s' })),
      },
      { name: 'skip', options: { every: '1s', lockAtMostFor: '3s' }, runMs: [50, 1500] },
    ],
  };
}

describe('fire times waiting behind their gate on a busy fleet (simulator, three nodes)', () => {
  for (const seed of [89, 100, 43, 90, 37, 76, 271]) {
    it(`seed ${seed}: every fire time once or on record, one run per gate at a time`, async () => {
      const options = busy(seed);
      const result = await simulate(options);
      expect(result.violations, formatReport(options, result)).toEqual([]);
    });
  }
});
