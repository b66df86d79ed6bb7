import { OncelyError } from '../../core/errors.js';
import { otherPrefixes, type SchemaState } from '../schema-state.js';
import { isPrefix } from '../validate.js';
import { type Layout, prefixEnd } from './layout.js';
import type { EtcdClientLike } from './txn.js';

/** Schema version this code writes and understands (the `<prefix>/schema` key). */
export const SCHEMA_VERSION = 1;

/** Range calls spent looking for other stores' namespaces (one per namespace met). */
const NAMESPACE_ROUNDS = 24;

/** Throws `SCHEMA` unless `found`, the value of the marker key, is a version this code understands. */
export function checkSchemaVersion(marker: Buffer, found: string | null): void {
  const version = Number(found);
  if (!/^\d+$/.test(found ?? '') || version < 1) {
    throw new OncelyError(
      'SCHEMA',
      `etcd store: key ${marker.toString()} holds ${JSON.stringify(found)}, not an oncely schema version; is another program using the prefix?`,
    );
  }
  if (version > SCHEMA_VERSION) {
    throw new OncelyError(
      'SCHEMA',
      `etcd store: the data under ${marker.toString().slice(0, -6)} has schema version ${version}, newer than this oncely understands (${SCHEMA_VERSION}); upgrade oncely`,
    );
  }
}

/**
 * Whether the store of `layout` has its schema marker (`<prefix>/schema`), read with one Range and
 * written never; and which other namespaces hold a marker. Those are found by skipping from one
 * namespace to the next (keys are sorted: the first key at or after a cursor names a namespace,
 * and the cursor then jumps past all of it), so the cost is one Range per namespace, not per key,
 * bounded by {@link NAMESPACE_ROUNDS}; then one Txn reads the candidates' markers. A user whose
 * role may not read the whole key space gets no list (`complete` false).
 */
export async function etcdSchemaState(client: EtcdClientLike, layout: Layout): Promise<SchemaState> {
  const marker = layout.schema;
  const prefix = marker.toString('utf8').slice(0, -'/schema'.length);
  const kv = (await client.kv.range({ key: marker })).kvs[0];
  const found = kv === undefined ? null : kv.value.toString('utf8');
  if (found !== null) checkSchemaVersion(marker, found);
  let others: string[] = [];
  let complete = false;
  try {
    const seen = await namespaces(client);
    complete = seen.complete;
    others = await marked(client, otherPrefixes(seen.names, prefix));
  } catch {
    // Not allowed to read outside the prefix (etcd RBAC), or a later call failed: no list.
  }
  return { present: found !== null, others, complete, made: 'keys' };
}

/** The namespaces (`<name>/…`) of the key space that are valid prefixes, as far as the rounds reach. */
async function namespaces(client: EtcdClientLike): Promise<{ names: string[]; complete: boolean }> {
  const names: string[] = [];
  const everything = Buffer.from([0]); // as a range end: every key after `key`
  let cursor: Buffer = Buffer.from([0]);
  for (let round = 0; round < NAMESPACE_ROUNDS; round++) {
    const first = (await client.kv.range({ key: cursor, range_end: everything, limit: 1, keys_only: true }))
      .kvs[0];
    if (first === undefined) return { names, complete: true };
    const slash = first.key.indexOf('/');
    if (slash < 0) {
      cursor = Buffer.concat([first.key, Buffer.from([0])]);
      continue;
    }
    const name = first.key.subarray(0, slash).toString('utf8');
    if (isPrefix(name)) names.push(name);
    cursor = prefixEnd(first.key.subarray(0, slash + 1)); // past every `<name>/…` key
  }
  return { names, complete: false };
}

/** Those of `names` whose `<name>/schema` key exists, in one Txn of count-only Ranges. */
async function marked(client: EtcdClientLike, names: string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const response = await client.kv.txn({
    success: names.map((name) => ({
      request_range: { key: Buffer.from(`${name}/schema`), count_only: true },
    })),
  });
  return names.filter((_, i) => Number(response.responses[i]?.response_range.count ?? 0) > 0);
}
