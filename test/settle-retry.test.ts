/**
 * settle() (src/scheduler/finish/settle.ts): a claim's settling batch whose first try failed is
 * retried in the background — but only if it did not land. A try whose answer was lost after the
 * store applied it must not be written again: its puts and moves would bring back what other
 * nodes changed since (simulator seed 185 of the lost-replies queue mix: a due entry and a
 * pending record came back). Driven here with a real memory store and a writer that loses the
 * first answer, or the first request.
 */
import { describe, expect, it } from 'vitest';
import { systemClock } from '../src/core/clock.js';
import { openStore } from '../src/index.js';
import { settle } from '../src/scheduler/finish/settle.js';
import { type NodeState, sharedController } from '../src/scheduler/node-state.js';
import type { Store, WriteOp } from '../src/store/types.js';
import { testPrefix } from './harness/backends.js';

/** The parts of a node's state settle() uses; `lose`: the first apply's answer or request. */
function nodeState(store: Store, lose: 'answer' | 'request') {
  let tries = 0;
  const state = {
    store,
    clock: systemClock,
    abandon: sharedController(),
    storeBack: sharedController(),
    running: new Set<Promise<void>>(),
    emit: () => {},
    writes: {
      submit: async (ops: WriteOp[]) => {
        tries++;
        if (tries === 1 && lose === 'request') throw new Error('request lost');
        const results = await store.apply(ops);
        if (tries === 1) throw new Error('answer lost');
        return results;
      },
    },
  };
  return { state: state as unknown as NodeState, tries: () => tries };
}

describe('settle(): a batch retried after a failed try', () => {
  it('is not written again when the failed try landed (its answer lost)', async () => {
    const store = await openStore(`memory:${testPrefix('settle')}`);
    const [lease] = await store.acquire([{ key: 'occ|j|1', owner: 'n1', leaseMs: 10_000 }]);
    const { state, tries } = nodeState(store, 'answer');
    const ops: WriteOp[] = [
      { op: 'put', key: 'ctl|pending|j|1', value: 'queued' },
      { op: 'delete', key: 'due|1|j' },
      { op: 'put', key: 'due|2|j', value: 'entry' },
      { op: 'release', key: lease!.key, token: lease!.token },
    ];
    await store.put('due|1|j', 'entry');
    let stored = false;
    await settle(state, 'test', ops, lease!, systemClock.monotonic(), () => {
      stored = true;
    });
    // Another node runs the queued fire time and moves the entry on, before the retry.
    await store.delete('ctl|pending|j|1');
    await store.apply([
      { op: 'delete', key: 'due|2|j' },
      { op: 'put', key: 'due|3|j', value: 'entry' },
    ]);
    await Promise.all(state.running);
    expect(tries()).toBe(1);
    expect(stored).toBe(true);
    expect(await store.get('ctl|pending|j|1')).toBeNull();
    expect((await store.scan('due|')).map((r) => r.key)).toEqual(['due|3|j']);
    await store.close();
  });

  it('is written again when the failed try did not land (its request lost)', async () => {
    const store = await openStore(`memory:${testPrefix('settle')}`);
    const [lease] = await store.acquire([{ key: 'occ|j|1', owner: 'n1', leaseMs: 10_000 }]);
    const { state, tries } = nodeState(store, 'request');
    const ops: WriteOp[] = [
      { op: 'put', key: 'ctl|pending|j|1', value: 'queued' },
      { op: 'release', key: lease!.key, token: lease!.token },
    ];
    await settle(state, 'test', ops, lease!, systemClock.monotonic());
    await Promise.all(state.running);
    expect(tries()).toBe(2);
    expect(await store.get('ctl|pending|j|1')).toBe('queued');
    expect(await store.inspect(lease!.key)).toBeNull();
    await store.close();
  });
});
