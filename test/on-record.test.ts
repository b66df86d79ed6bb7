import { describe, expect, it } from 'vitest';
import { accountedFor } from '../src/scheduler/claim/on-record.js';
import { gateScope, keys, type OccurrenceId } from '../src/scheduler/keys.js';
import type { NodeState } from '../src/scheduler/node-state.js';
import { MemoryStore } from '../src/store/memory.js';
import type { Store } from '../src/store/types.js';

/** A store that counts the keys `getMany` is asked for. */
function counting(store: Store): { store: Store; keysRead: () => number } {
  let read = 0;
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'getMany')
        return (keyList: readonly string[]) => {
          read += keyList.length;
          return target.getMany(keyList);
        };
      return Reflect.get(target, prop, receiver);
    },
  });
  return { store: wrapped, keysRead: () => read };
}

describe('on record (what a node reads before it claims an occurrence preferred to another node)', () => {
  const occ = (i: number): OccurrenceId => ({
    job: 'mail',
    scheduleId: `user-${i}`,
    fireTime: 1_800_000_000_000,
    shard: undefined,
  });

  it('counts history, in-flight and queued records (and an old gate record naming the fire time), four keys each', async () => {
    const memory = new MemoryStore();
    const { store, keysRead } = counting(memory);
    const s = { store } as unknown as NodeState;
    const o = Array.from({ length: 7 }, (_, i) => occ(i));
    await memory.put(keys.history(o[0]!, 1), '{}');
    await memory.put(keys.inflight(o[1]!), '{}');
    await memory.put(keys.pending(o[2]!.job, gateScope(o[2]!), undefined, o[2]!.fireTime), '{}');
    await memory.put(
      keys.pendingOfGate(o[3]!.job, gateScope(o[3]!), undefined),
      JSON.stringify({ fireTime: o[3]!.fireTime }),
    );
    await memory.put(
      keys.pendingOfGate(o[4]!.job, gateScope(o[4]!), undefined),
      JSON.stringify({ fireTime: 1 }),
    );
    await memory.put(keys.pendingOfGate(o[5]!.job, gateScope(o[5]!), undefined), 'not json');
    expect(await accountedFor(s, o)).toEqual([true, true, true, true, false, false, false]);
    // Four keys each, read together: one round trip per batch, whatever is found (a second round
    // for the queue records only was tried: half the keys when the runs are over, but one more
    // round trip per claiming tick while they are not — what a fan-out's takeovers mostly meet).
    expect(keysRead()).toBe(7 * 4);
    const ran = Array.from({ length: 600 }, (_, i) => occ(100 + i));
    await memory.apply(ran.map((x) => ({ op: 'put' as const, key: keys.history(x, 1), value: '{}' })));
    const before = keysRead();
    expect((await accountedFor(s, ran)).every(Boolean)).toBe(true);
    expect(keysRead() - before).toBe(2400);
  });
});
