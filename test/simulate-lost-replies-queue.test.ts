/**
 * Lost replies under the queueing policies: three nodes, jobs every second whose runs often
 * outlast the next fire time (overlap `queue`, `queue-all`, `skip`, and two stored schedules under
 * `queue`), 4 % of replies lost after the store applied the call, 1 % of requests lost, stalls,
 * drift and a crash. The simulator's checker: every fire time ran once or is on record with a
 * reason that holds, no two runs of a gate at once, every run that started finished or was
 * recovered.
 *
 * Seed 70 found two things:
 * - The gate a queued run asks for once it has won its occurrence was granted, its answer lost:
 *   the claim asked again and was refused by its own orphan grant for a whole lease
 *   (claim/gate-owner.ts now names the claim in the gate's owner, and the next tick adopts it).
 * - Adopted near the end of its lease, that queued run (+11 s) started and lost its lease at
 *   once; another node, which had queued +13 s behind the gate, then recorded +11 s `superseded`
 *   — a run that had started and never finished (`unfinished`). A superseded queued run whose
 *   run started meanwhile is now freed for recovery instead (Overlap.superseded).
 * Seed 234 is the first try at that fix, which ran the recovery at once: without the gate (a
 * superseded claim asks for none), beside the next fire time's run (`gate-overlap`).
 * Seed 186: a waiting record of stored/a@+4 s outlived its fire time — a misfire settle held the
 * occurrence "done" (an event, no history entry) — and, offered first at every poll and refused,
 * held every later fire time of that schedule back once on-time claims yielded to waiting ones
 * (Overlap.behindOlder): nothing of it ran from +15 s on. A refused waiting record whose
 * occurrence is held "done" is now dropped (Overlap.droppedStale).
 * Seed 185: a node whose due read was 3 s old settled stored/a@+10 s and +11 s as missed, though
 * +10 s was queued behind its gate and +11 s had run, and held +10 s "done": its queued run never
 * ran, and +9 s, superseded by it, was replaced by nothing (the checker's superseded chain). A
 * settle now goes ahead only if its entry is still where it was read (claim/entry-moved.ts), and
 * a settling batch is not written again once it landed (finish/settle.ts).
 * Seed 326: a claim won from a stale due read, its gate taken, queued its fire time a second time
 * with its move, which put back an entry another node had moved on (claim/entry-moved.ts).
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimulateOptions, simulate } from '../src/testing/index.js';

function queueing(seed: number): SimulateOptions {
  return {
    seed,
    nodes: 3,
    durationMs: 30_000,
    settleMs: 15_000,
    faults: {
      latencyMs: [1, 80],
      stallRate: 0.05,
      stallMs: 500,
      clockDriftRate: 0.01,
      lostReplyRate: 0.04,
      lostRequestRate: 0.01,
      crashes: 1,
    },
    scheduler: { pollInterval: '200ms' },
    jobs: [
      { name: 'queue', options: { every: '1s', lockAtMostFor: '3s', overlap: 'queue' }, runMs: [50, 1500] },
      { name: 'all', options: { every: '1s', lockAtMostFor: '3s', overlap: 'queue-all' }, runMs: [50, 1500] },
      { name: 'skip', options: { every: '1s', lockAtMostFor: '3s' }, runMs: [50, 1500] },
      {
        name: 'stored',
        options: { lockAtMostFor: '3s', overlap: 'queue' },
        runMs: [50, 2500],
        schedules: [
          { id: 'a', every: '1s' },
          { id: 'b', every: '2s' },
        ],
      },
    ],
  };
}

describe('lost replies under the queueing policies (simulator, three nodes)', () => {
  for (const seed of [70, 234, 186, 185, 326, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) {
    it(`seed ${seed}: every fire time once or on record, one run per gate at a time`, async () => {
      const options = queueing(seed);
      const result = await simulate(options);
      expect(result.violations, formatReport(options, result)).toEqual([]);
    });
  }
});
