import { ExecutionError, Redlock } from '@sesamecare-oss/redlock';
import { Redis } from 'ioredis';
import { LEASE_MS } from './types.js';

/** Key prefix of redlock's locks in the bench. */
export const REDLOCK_PREFIX = 'bench_redlock:';

export interface Competitor {
  lock(name: string): Promise<boolean>;
  close(): Promise<void>;
}

/** `@sesamecare-oss/redlock` on a single Redis instance (its own ioredis connection), no retries. */
export async function redlockCompetitor(url: string): Promise<Competitor> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {}); // failures surface as rejected commands
  try {
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    throw err;
  }
  const redlock = new Redlock([redis], { retryCount: 0 });
  return {
    async lock(name) {
      let lock: Awaited<ReturnType<Redlock['acquire']>>;
      try {
        lock = await redlock.acquire([REDLOCK_PREFIX + name], LEASE_MS);
      } catch (err) {
        if (err instanceof ExecutionError) return false; // held: no quorum with retryCount 0
        throw err;
      }
      await lock.release();
      return true;
    },
    async close() {
      await redis.quit();
    },
  };
}
