/**
 * A store whose node can "die" in one process (every later call never answers, as a killed
 * process's would not), see chosen calls fail, or stall: the pages tests' fault injection.
 */
import type { Store } from '../../src/store/types.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits until an asynchronous condition holds (polled every 50 ms). */
export async function eventually(
  condition: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** A store whose node can die (every later call never answers) or see chosen calls fail. */
export interface Faulty extends Store {
  faults: {
    dead: boolean;
    calls: { method: string; args: unknown[] }[];
    /** Rejects the call (STORE_UNAVAILABLE-like) while it returns true. */
    fail?: (method: string, args: unknown[]) => boolean;
    /** The node dies as this call's answer arrives: it never sees the answer, nor answers again. */
    dieAfter?: (method: string, args: unknown[]) => boolean;
    /** While set, calls wait for it (a stalled link); resolve it to let them through. */
    stall?: Promise<void> | undefined;
    /** Called with each answer as it arrives (before the caller sees it). */
    after?: ((method: string, args: unknown[], result: unknown) => void) | undefined;
  };
}
export function faulty(store: Store): Faulty {
  const faults: Faulty['faults'] = { dead: false, calls: [] };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'faults') return faults;
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'close') return value;
      return async (...args: unknown[]) => {
        if (faults.dead) return new Promise(() => {});
        if (faults.stall) await faults.stall;
        faults.calls.push({ method: String(prop), args });
        if (faults.fail?.(String(prop), args)) throw new Error(`injected failure of ${String(prop)}`);
        const result = await (value as (...a: unknown[]) => unknown).apply(target, args);
        faults.after?.(String(prop), args, result);
        if (faults.dieAfter?.(String(prop), args)) faults.dead = true;
        if (faults.dead) return new Promise(() => {});
        return result;
      };
    },
  }) as Faulty;
}
