import type { Store } from '../src/store/types.js';

/** Wraps a store so that every call through the Store interface is counted (`tryLock` counts as its acquire). */
export function counted(store: Store, counter: { calls: number }): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'close' || prop === 'tryLock') return value;
      return (...args: unknown[]) => {
        counter.calls++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
