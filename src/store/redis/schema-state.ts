import { OncelyError } from '../../core/errors.js';
import { otherPrefixes, type SchemaState } from '../schema-state.js';
import type { RedisClientLike } from './client.js';

/** Schema version this code writes and understands (the `{prefix}schema` key). */
export const SCHEMA_VERSION = 1;

/** The other stores' markers looked for: at most this many SCAN calls of {@link SCAN_COUNT}. */
const SCAN_ROUNDS = 10;
const SCAN_COUNT = 1000;

/**
 * Throws `SCHEMA` unless `found`, the value of the marker key `{p}schema`, is a schema version
 * this code understands (another program's key, or a newer oncely's data).
 */
export function checkSchemaVersion(base: string, found: string | null): void {
  const marker = `${base}schema`;
  const version = Number(found);
  if (!Number.isInteger(version) || version < 1) {
    throw new OncelyError(
      'SCHEMA',
      `redis store: key ${marker} holds ${JSON.stringify(found)}, not an oncely schema version; is another program using the prefix?`,
    );
  }
  if (version > SCHEMA_VERSION) {
    throw new OncelyError(
      'SCHEMA',
      `redis store: the data under ${base} has schema version ${version}, newer than this oncely understands (${SCHEMA_VERSION}); upgrade oncely`,
    );
  }
}

/**
 * Whether the store under `base` (`{prefix}`) has its schema marker, read with one GET and
 * written never. With `scan` (a client on one server, not a Cluster), the other stores' markers
 * (`{*}schema`) are looked for too, with a SCAN of at most 10,000 keys: on a bigger database the
 * list may be incomplete, and says so.
 */
export async function redisSchemaState(
  client: RedisClientLike,
  base: string,
  scan: boolean,
): Promise<SchemaState> {
  const found = (await client.call('get', `${base}schema`)) as string | null;
  if (found !== null) checkSchemaVersion(base, found);
  const prefixes: string[] = [];
  let complete = false;
  let cursor = '0';
  for (let round = 0; scan && round < SCAN_ROUNDS && !complete; round++) {
    const [next, keys] = (await client.call('scan', cursor, 'MATCH', '{*}schema', 'COUNT', SCAN_COUNT)) as [
      string,
      string[],
    ];
    for (const key of keys) prefixes.push(key.slice(1, -'}schema'.length));
    cursor = next;
    complete = cursor === '0';
  }
  return {
    present: found !== null,
    others: otherPrefixes(prefixes, base.slice(1, -1)),
    complete,
    made: 'keys',
  };
}
