/**
 * A run waiting for a start in a rate window (a retry, a late start: run/fleet-limits.ts
 * `rateStart`) holds its node's place in line while it waits, by its occurrence's start, and its
 * own node's due work yields to it. Granted at its first ask it takes no place: a place written
 * with the grant stayed in the limit record after it and held newer work on other nodes back
 * until it lapsed — a window later, an hour for a limit per hour. Real clock, memory store.
 */
import { describe, expect, it } from 'vitest';
import type { JobSpec } from '../src/scheduler/job-options.js';
import type { LimitRecord } from '../src/scheduler/run/limit-record.js';
import { memoryLimits } from './fixtures/memory-limits.js';

const spec = {
  name: 'hourly',
  limits: { maxConcurrency: undefined, rate: { max: 2, perMs: 3_600_000 } },
  lockAtMostForMs: 60_000,
} as unknown as JobSpec;

async function setup() {
  const { store, limitsOf, errors } = await memoryLimits();
  const record = async (): Promise<LimitRecord> => {
    const [cur] = await store.scan('lim|hourly|', { limit: 1, reverse: true });
    return JSON.parse(cur!.value) as LimitRecord;
  };
  return { limitsOf, record, errors, now: () => store.now() };
}

describe('fleet limits: a rate start', () => {
  it('granted at its first ask, it leaves no place in line behind', async () => {
    const { limitsOf, record, errors, now } = await setup();
    const a = limitsOf('a');
    const b = limitsOf('b');
    try {
      const start = (await now()) - 5_000;
      await a.rateStart(spec, new AbortController().signal, start);
      await new Promise((r) => setTimeout(r, 50));
      expect((await record()).w?.['a']).toBeUndefined();
      // Newer work on another node is not held back by it: the window's second start goes.
      const r = await b.reserve(spec, 1, [start + 1_000]);
      expect(r.granted).toBe(1);
      expect(errors).toEqual([]);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('refused, it holds its place on record past its next ask', async () => {
    const { limitsOf, record, errors, now } = await setup();
    const a = limitsOf('a');
    const b = limitsOf('b');
    const waiting = new AbortController();
    try {
      const t = await now();
      // The window is full (2 of 2 an hour).
      expect((await b.reserve(spec, 2, [t - 10_000, t - 10_000])).granted).toBe(2);
      const retry = a.rateStart(spec, waiting.signal, t - 5_000);
      await new Promise((r) => setTimeout(r, 100));
      // Its place is on record, held past its next ask (an hour from now, the window's end).
      const place = (await record()).w?.['a'];
      expect(place?.[0]).toBe(t - 5_000);
      expect(place?.[1]).toBeGreaterThan(t + 3_600_000 - 60_000);
      waiting.abort();
      await retry;
      expect(errors).toEqual([]);
    } finally {
      waiting.abort();
      await a.stop();
      await b.stop();
    }
  });
});
