import type { Floor } from './types.js';
import { LEASE_MS } from './types.js';

/**
 * A lease lock in a `Map`, as you would write it for one process with oncely's semantics: a
 * store-wide counter for tokens, expiry on the process clock, release only by the token that
 * holds an unexpired lease (the entry stays, ended). There is no round trip to measure.
 */
export function memoryFloor(): Floor {
  const leases = new Map<string, { token: number; expiresAt: number }>();
  let fence = 0;
  return {
    version: `Node ${process.version} Map`,
    roundTrip: undefined,
    async lock(name) {
      const now = Date.now();
      const held = leases.get(name);
      if (held && held.expiresAt > now) return false;
      const token = ++fence;
      leases.set(name, { token, expiresAt: now + LEASE_MS });
      // release: only the holder, only while unexpired
      const mine = leases.get(name);
      if (!mine || mine.token !== token || mine.expiresAt <= Date.now()) return true;
      mine.expiresAt = Date.now();
      return true;
    },
    async close() {
      leases.clear();
    },
  };
}
