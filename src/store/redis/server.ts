import { docPath } from '../../core/docs.js';
import { OncelyError } from '../../core/errors.js';

/**
 * What the Redis store checks and says about the server it runs on: the version and the risky
 * settings `migrate()` reads from `INFO`, and the hints added to errors that come from a server
 * setting (memory, replica, password, ACL). See docs/redis.md for the settings themselves.
 */

/** Oldest server with every command the scripts use (SET … PXAT and ZMSCORE arrived in 6.2). */
const MIN_VERSION: readonly [number, number] = [6, 2];

/**
 * `INFO` parsed into fields; `undefined` (and a line in `warnings`) when the server refuses it
 * (renamed or ACL-restricted).
 */
export async function readInfo(
  client: { call(command: string): Promise<unknown> },
  warnings: string[],
): Promise<Map<string, string> | undefined> {
  let text: string;
  try {
    text = String(await client.call('info'));
  } catch (err) {
    if (err instanceof Error && err.name === 'ReplyError') {
      warnings.push(`INFO is not allowed (${err.message}); the server version and settings were not checked`);
      return undefined;
    }
    throw err;
  }
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return fields;
}

/**
 * Refuses a server older than {@link MIN_VERSION} (`SCHEMA`), adds a sentence to `warnings` for
 * each risky setting.
 */
export function checkServer(info: Map<string, string>, warnings: string[]): void {
  const version = info.get('redis_version');
  if (version !== undefined) {
    const [major = 0, minor = 0] = version.split('.').map(Number);
    if (major < MIN_VERSION[0] || (major === MIN_VERSION[0] && minor < MIN_VERSION[1])) {
      throw new OncelyError(
        'SCHEMA',
        `redis store needs Redis ${MIN_VERSION.join('.')} or newer (it uses SET … PXAT); the server is ${version}`,
      );
    }
  }
  const policy = info.get('maxmemory_policy');
  if (policy !== undefined && policy !== 'noeviction') {
    warnings.push(
      `maxmemory-policy is ${policy}: under memory pressure Redis may evict a lease (a lock silently lost) or the fence counter; set maxmemory-policy noeviction`,
    );
  }
  if (info.get('aof_enabled') === '0') {
    warnings.push(
      'appendonly is off: a Redis restart loses leases written since the last snapshot (locks held then are forgotten); enable AOF (appendfsync everysec) for lock data',
    );
  }
  if (info.get('role') === 'slave') {
    warnings.push('connected to a replica: writes will fail with READONLY; connect to the primary');
  }
}

/** What to do about a server error that comes from a setting, or `undefined`. */
export function hintFor(message: string): string | undefined {
  if (message.startsWith('OOM'))
    return 'Redis reached maxmemory; free memory or raise maxmemory (keep noeviction)';
  if (message.startsWith('READONLY'))
    return 'connected to a replica, e.g. after a failover; connect to the primary';
  if (message.startsWith('NOAUTH') || message.startsWith('WRONGPASS'))
    return 'check the password in the store URL';
  if (message.startsWith('NOPERM'))
    return `the Redis user lacks a command or key pattern oncely needs; see ${docPath('redis.md')} (ACLs)`;
  if (message.startsWith('WRONGTYPE'))
    return `a key under the store's prefix holds data oncely did not write`;
  return undefined;
}
