/**
 * A fleet permit kept by a claim whose answer was lost (run/fleet-limits.ts, `keep`) counts until
 * the claim's lease has surely run out, not until the node next asks the store about the claim: a
 * node whose ticks kept failing backed off for 16 s and more without asking, its refreshed limit
 * entry still counting the kept permit, and two such nodes held both permits of a
 * `maxConcurrency: 2` job to the end of a simulation (mix5 seed 421, at an earlier state of the
 * code). Real clock, memory store, two nodes' limits.
 */
import { describe, expect, it } from 'vitest';
import { systemClock } from '../src/core/clock.js';
import type { JobSpec } from '../src/scheduler/job-options.js';
import { memoryLimits } from './fixtures/memory-limits.js';

describe('fleet limits: a kept permit', () => {
  it("goes back once the unanswered claim's lease has run out, though the node never asks again", async () => {
    const { limitsOf, errors } = await memoryLimits();
    const spec = {
      name: 'capped',
      limits: { maxConcurrency: 1, rate: undefined },
      lockAtMostForMs: 60_000,
    } as unknown as JobSpec;
    const a = limitsOf('a');
    const b = limitsOf('b');
    try {
      // a's claim got no answer: it keeps the permit until its lease (300 ms here) has run out.
      a.keep(spec, systemClock.monotonic() + 300);
      expect((await a.reserve(spec, 1)).granted).toBe(0);
      expect((await b.reserve(spec, 1)).granted).toBe(0);
      // a never asks about the claim (its ticks fail); its entry would count for a minute. Asked
      // for every 50 ms, the permit comes free soon after the 300 ms (5 s: a loaded machine).
      const deadline = performance.now() + 5_000;
      let granted = 0;
      while (granted === 0 && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        const r = await b.reserve(spec, 1);
        granted = r.granted;
        b.settled(spec, r);
      }
      expect(granted).toBe(1);
      expect(errors).toEqual([]);
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
