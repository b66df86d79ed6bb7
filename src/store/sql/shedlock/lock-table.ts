import { invalidArgument } from '../../../core/errors.js';
import type { LockGrant, LockTable } from '../../lock-table.js';
import { SHEDLOCK_MAX_NAME, type ShedlockOps } from './ops.js';

/** Runs one lock-table call as a store call: CLOSED after close(), driver errors as OncelyErrors. */
export type StoreCall = <T>(
  operation: 'acquire' | 'extend' | 'release',
  work: () => Promise<T>,
) => Promise<T>;

/**
 * The {@link LockTable} of a SQL store opened with `shedlockTable`: named locks live in ShedLock's
 * table under the lock's own name (what `@SchedulerLock(name = …)` uses), not in oncely's leases.
 * Names and lease lengths arrive validated by `lockSpec`; this adds only the table's own limits.
 */
export function shedlockLockTable(ops: ShedlockOps, call: StoreCall): LockTable {
  const { given } = ops.table;
  const checkLease = (leaseMs: number) => {
    const max = ops.maxLeaseMs?.();
    if (max !== undefined && leaseMs > max) {
      throw invalidArgument(
        `lockAtMostFor of ${leaseMs} ms would end after what ShedLock table ${given} can hold (its TIMESTAMP columns end in January 2038); use a shorter lockAtMostFor`,
      );
    }
  };
  return {
    checkName(name) {
      const length = [...name].length;
      if (length > SHEDLOCK_MAX_NAME) {
        throw invalidArgument(
          `lock name is ${length} characters long; ShedLock table ${given} holds names of at most ${SHEDLOCK_MAX_NAME} (its name column is VARCHAR(${SHEDLOCK_MAX_NAME}))`,
        );
      }
    },
    async acquire(name, owner, leaseMs) {
      checkLease(leaseMs);
      const granted = await call('acquire', () => ops.acquire(name, owner, leaseMs));
      return granted && { key: name, owner, ...granted };
    },
    async extend(grant: LockGrant, leaseMs) {
      checkLease(leaseMs);
      return await call('extend', () => ops.extend(grant, leaseMs));
    },
    async release(grant: LockGrant, holdUntil) {
      return await call('release', () => ops.release(grant, holdUntil));
    },
  };
}
