import { isIP } from 'node:net';
import type { RedisOptions } from 'ioredis';
import { OncelyError } from '../../core/errors.js';
import { redactUrl } from '../../core/redact.js';

/** Validates a redis:// or rediss:// URL and turns it into ioredis options (password kept apart). */
export function parseRedisUrl(
  url: string,
  connectTimeoutMs: number,
): { redisOptions: RedisOptions; password: string | undefined } {
  const shown = redactUrl(url);
  const bad = (why: string) =>
    new OncelyError(
      'INVALID_ARGUMENT',
      `bad Redis URL ${JSON.stringify(shown)}: ${why}; use redis://[[user]:password@]host[:port][/db] or rediss://… for TLS`,
    );
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad('not a URL');
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:')
    throw bad('the scheme must be redis: or rediss:');
  if (parsed.hostname === '') throw bad('the host is missing');
  if (parsed.search !== '' || parsed.hash !== '')
    throw bad('query parameters and fragments are not supported');
  const path = parsed.pathname.replace(/^\//, '');
  if (path !== '' && !/^\d{1,5}$/.test(path))
    throw bad(`the database must be a number, got ${JSON.stringify(path)}`);
  const password = parsed.password === '' ? undefined : decodeURIComponent(parsed.password);
  const username = parsed.username === '' ? undefined : decodeURIComponent(parsed.username);
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  const redisOptions: RedisOptions = {
    host,
    port: parsed.port === '' ? 6379 : Number(parsed.port),
    db: path === '' ? 0 : Number(path),
    // Connect explicitly in migrate(), so a dead server fails openStore() with its real cause.
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    // A command never waits longer than this (half-open connections included): lease maths needs
    // failures to surface, not to hang past the lease.
    commandTimeout: connectTimeoutMs,
    // While a connection is being re-established commands wait in the offline queue, but give up
    // after one failed reconnect instead of the default twenty.
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    // A command sent before the connection dropped fails (STORE_UNAVAILABLE) instead of being sent
    // again after the reconnect: ioredis' default resend also re-sends commands that already timed
    // out, so a write its caller was told had failed could land seconds later, over newer data
    // (test/fault-proxy.test.ts). Whether it ran before the drop stays unknown, as for any lost reply.
    autoResendUnfulfilledCommands: false,
    // Reconnect forever with bounded back-off: the store comes back when the server does.
    retryStrategy: (attempt: number) => Math.min(100 * 2 ** Math.min(attempt, 5), 2000),
  };
  if (username !== undefined) redisOptions.username = username;
  if (password !== undefined) redisOptions.password = password;
  // SNI names a host, never an address (RFC 6066). Custom CAs or client certificates: pass your own client.
  if (parsed.protocol === 'rediss:') redisOptions.tls = isIP(host) === 0 ? { servername: host } : {};
  return { redisOptions, password };
}
