import type { Clock } from '../core/clock.js';
import type { Renewable } from '../lock/keep-alive.js';
import { LeaseLock } from '../lock/lease-lock.js';
import type { Lease, Store } from '../store/types.js';
import type { JobSpec } from './job-options.js';

/** What a run's lease locks need: the job's lease lengths, this node, the store and the clock. */
export interface LeaseDeps {
  spec: JobSpec;
  node: string;
  store: Store;
  clock: Clock;
}

/** The lease lock of one of a run's leases (occurrence or overlap gate), kept alive by the run. */
export function lockFor(deps: LeaseDeps, lease: Lease, sentAt: number): LeaseLock {
  const { spec, node, store, clock } = deps;
  return new LeaseLock(
    store,
    {
      name: lease.key,
      key: lease.key,
      owner: node,
      atMostMs: spec.lockAtMostForMs,
      atLeastMs: spec.lockAtLeastForMs,
    },
    lease,
    sentAt,
    clock,
  );
}

/** Both leases as one: extended together, lost when either is. */
export function renewTogether(a: LeaseLock, b: LeaseLock): Renewable {
  return {
    name: a.name,
    get localDeadline() {
      return Math.min(a.localDeadline, b.localDeadline);
    },
    extend: async (leaseMs) => {
      const [x, y] = await Promise.all([a.extend(leaseMs), b.extend(leaseMs)]);
      return x && y;
    },
  };
}
