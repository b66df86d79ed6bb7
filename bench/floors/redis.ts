import { randomUUID } from 'node:crypto';
import { Redis, type Result } from 'ioredis';
import { type Floor, LEASE_MS } from './types.js';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    benchFloorRelease(key: string, owner: string): Result<number, Context>;
  }
}

/** KEYS[1] lock key; ARGV[1] owner. Deletes the key only if we still own it; returns 1 if deleted. */
const COMPARE_AND_DELETE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** Key prefix of the floor's locks (they are deleted on release, so nothing stays behind). */
export const REDIS_FLOOR_PREFIX = 'bench_floor:';

/** A lease lock through `ioredis` on one connection: `SET key owner NX PX 30000`, then a Lua compare-and-delete (EVALSHA). */
export async function redisFloor(url: string): Promise<Floor> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {}); // failures surface as rejected commands
  redis.defineCommand('benchFloorRelease', { numberOfKeys: 1, lua: COMPARE_AND_DELETE });
  let info: string;
  try {
    info = await redis.info('server');
  } catch (err) {
    redis.disconnect();
    throw err;
  }
  const version = /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? '?';
  return {
    version: `Redis ${version}`,
    async lock(name) {
      const key = REDIS_FLOOR_PREFIX + name;
      const owner = randomUUID();
      if ((await redis.set(key, owner, 'PX', LEASE_MS, 'NX')) !== 'OK') return false;
      if ((await redis.benchFloorRelease(key, owner)) !== 1)
        throw new Error(`redis floor: lost ${name} before release`);
      return true;
    },
    async roundTrip() {
      await redis.ping();
    },
    async close() {
      await redis.quit();
    },
  };
}
