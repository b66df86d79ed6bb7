import { Redis, type Result } from 'ioredis';
import { type Floor, type FloorOptions, LEASE_MS } from './types.js';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    benchFloorAcquire(
      key: string,
      fence: string,
      leaseMs: number,
    ): Result<[number, string, string] | null, Context>;
    benchFloorRelease(key: string, token: string): Result<number, Context>;
  }
}

/**
 * KEYS[1] lock key, KEYS[2] fence counter; ARGV[1] lease ms. Takes the key if it is free (Redis
 * expires it on its own clock), with a token from the never-deleted INCR counter; returns
 * { token, TIME seconds, TIME µs }, or nil when held.
 */
const ACQUIRE = `if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local token = redis.call('INCR', KEYS[2])
local t = redis.call('TIME')
redis.call('SET', KEYS[1], token, 'NX', 'PX', ARGV[1])
return { token, t[1], t[2] }`;

/** KEYS[1] lock key; ARGV[1] token. Deletes the key only if that token still holds it; returns 1 if deleted. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/**
 * A lease lock through `ioredis` on one connection, as you would write it by hand with oncely's
 * semantics: one Lua script (EVALSHA through `defineCommand`) that takes a free key with `SET NX
 * PX`, draws the token from an `INCR` counter and reads `TIME`; one Lua compare-and-delete on the
 * token. Lock keys are `<table>:<name>`, the counter `<table>:fence` (deleted on close).
 */
export async function redisFloor({ url, table }: FloorOptions): Promise<Floor> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {}); // failures surface as rejected commands
  redis.defineCommand('benchFloorAcquire', { numberOfKeys: 2, lua: ACQUIRE });
  redis.defineCommand('benchFloorRelease', { numberOfKeys: 1, lua: RELEASE });
  const fence = `${table}:fence`;
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
      const key = `${table}:${name}`;
      const got = await redis.benchFloorAcquire(key, fence, LEASE_MS);
      if (!got) return false;
      if ((await redis.benchFloorRelease(key, String(got[0]))) !== 1)
        throw new Error(`redis floor: lost ${name} before release`);
      return true;
    },
    async roundTrip() {
      await redis.ping();
    },
    async close() {
      await redis.del(fence).catch(() => {});
      await redis.quit();
    },
  };
}
