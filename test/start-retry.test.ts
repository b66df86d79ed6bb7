/**
 * A run's start batch (src/scheduler/run/run-persist.ts, `persistStart`), retried while the store
 * is away — but not written again once it landed. A try whose answer was lost after the store
 * applied it, written again, put back the due entry it had moved on, after another node had moved
 * it further (a stale copy of the schedule's chain). Driven with a real memory store and a writer
 * that loses the first answer, or the first request.
 */
import { describe, expect, it } from 'vitest';
import { systemClock } from '../src/core/clock.js';
import { openStore } from '../src/index.js';
import { persistStart } from '../src/scheduler/run/run-persist.js';
import type { RunDeps } from '../src/scheduler/run/run-records.js';
import type { Store, WriteOp } from '../src/store/types.js';
import { testPrefix } from './harness/backends.js';

/** The parts of a run's deps persistStart uses; `lose`: the first try's answer or request. */
function runDeps(store: Store, lose: 'answer' | 'request', meanwhile: () => Promise<void>) {
  let tries = 0;
  const deps = {
    store,
    clock: systemClock,
    emit: () => {},
    storeBack: () => new AbortController().signal,
    writes: {
      submit: async (ops: WriteOp[]) => {
        tries++;
        if (tries === 1 && lose === 'request') throw new Error('request lost');
        const results = await store.apply(ops);
        if (tries === 1) {
          await meanwhile();
          throw new Error('answer lost');
        }
        return results;
      },
    },
  };
  return { deps: deps as unknown as RunDeps, tries: () => tries };
}

const INFLIGHT = { key: 'ctl|run|j||1|', value: '{"token":7}' };
const START: WriteOp[] = [
  { op: 'delete', key: 'due|1|j' },
  { op: 'put', key: 'due|2|j', value: 'entry' },
  { op: 'put', key: INFLIGHT.key, value: INFLIGHT.value },
];
/** Another node handles fire time 2 (a skip, or its run) and moves the entry on to 3. */
const moveOn = (store: Store) => async () => {
  await store.apply([
    { op: 'delete', key: 'due|2|j' },
    { op: 'put', key: 'due|3|j', value: 'entry' },
  ]);
};

describe('a run start batch retried after a failed try', () => {
  it('is not written again when the failed try landed (its answer lost)', async () => {
    const store = await openStore(`memory:${testPrefix('start')}`);
    await store.put('due|1|j', 'entry');
    const { deps, tries } = runDeps(store, 'answer', moveOn(store));
    const halt = new AbortController();
    expect(await persistStart(deps, 'start of j', START, INFLIGHT, halt.signal)).toBe(true);
    expect(tries()).toBe(1);
    // Written again, the batch put back due|2|j beside the entry another node had moved on.
    expect((await store.scan('due|')).map((r) => r.key)).toEqual(['due|3|j']);
    expect(await store.get(INFLIGHT.key)).toBe(INFLIGHT.value);
    await store.close();
  });

  it('is written again when the failed try did not land (its request lost)', async () => {
    const store = await openStore(`memory:${testPrefix('start')}`);
    await store.put('due|1|j', 'entry');
    const { deps, tries } = runDeps(store, 'request', async () => {});
    const halt = new AbortController();
    expect(await persistStart(deps, 'start of j', START, INFLIGHT, halt.signal)).toBe(true);
    expect(tries()).toBe(2);
    expect((await store.scan('due|')).map((r) => r.key)).toEqual(['due|2|j']);
    expect(await store.get(INFLIGHT.key)).toBe(INFLIGHT.value);
    await store.close();
  });
});
