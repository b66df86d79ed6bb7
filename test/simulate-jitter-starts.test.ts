/**
 * Jittered triggers under the simulator's fault mixes: every run of a fire time — on time, a
 * misfire replay or a recovery, whichever node and path ran it — is told `ctx.scheduledAt` = its
 * fire time plus the offset every node computes, and starts no earlier on the store clock (the
 * checker's `wrong-start`, checker-starts.ts). Sweeps of 2026-12-07 (docs/simulator.md): before
 * the fixes named below, 149 of 150 seeds of the first mix and 16 of 30 of the second broke it;
 * with them, none of 300 per fault mix.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, type SimJob, type SimulateOptions, simulate } from '../src/testing/index.js';
import { BUSY_RUN, MIX5_RUN, SIM_RUN } from './fixtures/sim-faults.js';
import {
  JALL,
  JIT,
  JITTERED_CATCH_UP,
  JITTERED_OWN,
  QUEUED,
  SHARDED,
  SHARDED_STORED,
} from './fixtures/sim-jobs.js';

const OWN: SimJob[] = [JITTERED_OWN, JITTERED_CATCH_UP, SHARDED];
const STORED: SimJob[] = [JIT, JALL, SHARDED, SHARDED_STORED, QUEUED];

async function expectOk(run: Omit<SimulateOptions, 'seed' | 'jobs'>, jobs: SimJob[], seed: number) {
  const options = { ...run, jobs, seed } as SimulateOptions;
  const result = await simulate(options);
  if (!result.ok) expect.fail(formatReport(options, result));
}

describe('simulate: a jittered fire time starts at its offset on every path', () => {
  it('a run that waited or queued behind its gate keeps its offset (job trigger seeds 144, 145; stored seeds 2, 4)', async () => {
    // The pending record (claim/pending-record.ts) did not carry the start, so the node that
    // read it back ran the fire time told scheduledAt = the fire time (lateness counted from it).
    for (const seed of [144, 145]) await expectOk(SIM_RUN, OWN, seed);
    for (const seed of [2, 4]) await expectOk(BUSY_RUN, STORED, seed);
  });

  it("a sharded fire time's shards completed below the mark keep their offset (seeds 27 sim, 6 busy)", async () => {
    // due/misfire.ts belowMark queued the shards nobody held without their start.
    await expectOk(SIM_RUN, OWN, 27);
    await expectOk(BUSY_RUN, OWN, 6);
  });

  it('a watched fire time another node held and never started is recovered at its offset (seeds 8 busy, 12 mix5)', async () => {
    // due/misfire.ts watch() handed claim/watch.ts a candidate without its start, and the
    // recovery (claim/unanswered.ts offerAgain) queued it as starting at the fire time.
    await expectOk(BUSY_RUN, OWN, 8);
    await expectOk(MIX5_RUN, OWN, 12);
  });
});
