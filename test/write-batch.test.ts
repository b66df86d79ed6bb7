/**
 * The scheduler's group commit (src/scheduler/finish/write-batch.ts): what one turn of the event loop
 * submits goes out together, a full batch at once, never a group split across calls.
 */
import { describe, expect, it } from 'vitest';
import { systemClock } from '../src/core/clock.js';
import { WriteBatcher } from '../src/scheduler/finish/write-batch.js';
import type { Store, WriteOp } from '../src/store/types.js';
import { MAX_BATCH } from '../src/store/validate.js';

/** A store whose `apply` records each call's ops and answers true for each (after `gate`, if set). */
function recordingStore(gate?: Promise<void>) {
  const calls: WriteOp[][] = [];
  const store = {
    async apply(ops: readonly WriteOp[]) {
      calls.push([...ops]);
      if (gate) await gate;
      return ops.map(() => true);
    },
  } as unknown as Store;
  return { store, calls };
}

const put = (key: string): WriteOp => ({ op: 'put', key, value: 'v' });

describe('WriteBatcher', () => {
  it('sends what one turn submitted in one call, below a full batch', async () => {
    const { store, calls } = recordingStore();
    const batcher = new WriteBatcher(store, systemClock);
    // 300 runs' start batches of two ops each, submitted in one turn (as a claim's runs are set up).
    const groups = Array.from({ length: 300 }, (_, i) => [put(`a${i}`), put(`b${i}`)]);
    const results = await Promise.all(groups.map((g) => batcher.submit(g)));
    expect(calls.map((c) => c.length)).toEqual([600]);
    expect(results.every((r) => r.length === 2 && r.every(Boolean))).toBe(true);
  });

  it('sends a full batch at once and never splits a group', async () => {
    const { store, calls } = recordingStore();
    const batcher = new WriteBatcher(store, systemClock);
    // Groups of three: the first call takes as many whole groups as fit in MAX_BATCH ops.
    const groups = Array.from({ length: 500 }, (_, i) => [put(`a${i}`), put(`b${i}`), put(`c${i}`)]);
    const pending = groups.map((g) => batcher.submit(g));
    // The first full batch left during the turn, before the rest was submitted.
    expect(calls.length).toBeGreaterThanOrEqual(1);
    expect(calls[0]!.length).toBe(Math.floor(MAX_BATCH / 3) * 3);
    await Promise.all(pending);
    expect(calls.reduce((n, c) => n + c.length, 0)).toBe(1500);
    for (const c of calls) {
      expect(c.length % 3).toBe(0);
      // A group's ops stay together and in order.
      for (let i = 0; i < c.length; i += 3) {
        const n = c[i]!.key.slice(1);
        expect(c.slice(i, i + 3).map((op) => op.key)).toEqual([`a${n}`, `b${n}`, `c${n}`]);
      }
    }
  });

  it('holds what comes while three calls are out and sends it together when one returns', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const { store, calls } = recordingStore(gate);
    const batcher = new WriteBatcher(store, systemClock);
    const first: Promise<boolean[]>[] = [];
    for (const turn of [0, 1, 2]) {
      // Three turns apart: one call each, all three left unanswered.
      first.push(batcher.submit([put(`t${turn}`)]));
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(calls.length).toBe(3);
    const later = Array.from({ length: 10 }, (_, i) => batcher.submit([put(`l${i}`)]));
    await new Promise((r) => setTimeout(r, 20));
    expect(calls.length).toBe(3);
    open();
    await Promise.all([...first, ...later]);
    expect(calls.length).toBe(4);
    expect(calls[3]!.map((op) => op.key)).toEqual(Array.from({ length: 10 }, (_, i) => `l${i}`));
  });
});
