import { invalidArgument } from '../../core/errors.js';
import { checkOptionNames } from '../../core/options.js';
import { onlyWith, stringOption, timeoutOption } from '../store-options.js';
import { validatePrefix } from '../validate.js';
import type { RedisClientLike, RedisStoreOptions } from './client.js';

const KNOWN = ['client', 'url', 'prefix', 'connectTimeoutMs'];

/** `RedisStore`'s options once checked: the caller's client, or a URL for a client the store owns. */
export type CheckedRedisOptions = { prefix: string } & (
  | { client: RedisClientLike }
  | { url: string; connectTimeoutMs: number }
);

/**
 * Validates `RedisStore`'s options (`INVALID_ARGUMENT` naming the field): known names only,
 * exactly one of `client` and `url`, and `connectTimeoutMs` only with `url` (it shapes the client
 * the store creates; a caller's client keeps its own timeouts, so there it would be ignored).
 */
export function checkRedisOptions(options: RedisStoreOptions): CheckedRedisOptions {
  checkOptionNames('RedisStore', options, KNOWN);
  onlyWith(
    'RedisStore',
    options,
    'connectTimeoutMs',
    'url',
    'set connectTimeout and commandTimeout on your own client',
  );
  const connectTimeoutMs = timeoutOption(options.connectTimeoutMs, 'connectTimeoutMs', 10_000);
  const url = stringOption(options.url, 'RedisStore url');
  const prefix = validatePrefix(options.prefix ?? 'oncely_');
  const { client } = options;
  if (client !== undefined && url !== undefined)
    throw invalidArgument('RedisStore takes either `client` or `url`, not both');
  if (client !== undefined) {
    if (client === null || typeof client.call !== 'function')
      throw invalidArgument('RedisStore `client` must be an ioredis client (it needs call())');
    return { prefix, client };
  }
  if (url === undefined)
    throw invalidArgument('RedisStore needs `client` (an ioredis client) or `url` (redis://…)');
  return { prefix, url, connectTimeoutMs };
}
