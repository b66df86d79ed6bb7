import { randomUUID } from 'node:crypto';
import { type Floor, LEASE_MS } from './types.js';

/** A lease lock in a `Map`, as you would write it for one process; there is no round trip to measure. */
export function memoryFloor(): Floor {
  const leases = new Map<string, { owner: string; expiresAt: number }>();
  return {
    version: `Node ${process.version} Map`,
    roundTrip: undefined,
    async lock(name) {
      const now = Date.now();
      const held = leases.get(name);
      if (held && held.expiresAt > now) return false;
      const owner = randomUUID();
      leases.set(name, { owner, expiresAt: now + LEASE_MS });
      // release: only if we still own it
      if (leases.get(name)?.owner === owner) leases.delete(name);
      return true;
    },
    async close() {
      leases.clear();
    },
  };
}
