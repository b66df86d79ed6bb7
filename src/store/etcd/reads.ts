import type { IKeyValue, IRangeRequest } from 'etcd3';
import type { Lease, StoredRecord } from '../types.js';
import type { NormalizedScan } from '../validate.js';
import { decodeLease, decodeRecord, type Layout, leaseToken } from './layout.js';
import { type EtcdClientLike, get, only, txnOf, ungrouped } from './txn.js';

/**
 * The etcd store's reads. Each is one round trip (a Range, or one Txn of Ranges, which etcd
 * answers at one revision), except a page that has to skip expired-but-unswept entries: it asks
 * for more at the *same* revision, so a page is still one consistent snapshot. Expiry is judged
 * against the store time `now` the caller passes (see ./clock.ts), never by etcd.
 */

/** The values of `keys` (distinct), null when absent or expired, in one Txn of Ranges. */
export async function readRecords(
  client: EtcdClientLike,
  layout: Layout,
  keys: readonly string[],
  now: number,
): Promise<(string | null)[]> {
  const ops = keys.map((key) => get(layout.record(key)));
  const txn = txnOf([], ops);
  const response = await client.kv.txn(txn);
  const responses = ungrouped(txn.success!, response.responses);
  return keys.map((_, i) => {
    const kv = only(responses[i]);
    if (kv === undefined) return null;
    const record = decodeRecord(kv.value);
    return record.expiresAt === null || record.expiresAt > now ? record.value : null;
  });
}

/** The unexpired lease of `key`, or null. */
export function liveLease(
  layout: Layout,
  kv: IKeyValue | undefined,
  now: number,
  base: number,
): Lease | null {
  if (kv === undefined) return null;
  const stored = decodeLease(kv.value);
  if (stored.expiresAt <= now) return null;
  return {
    key: layout.keyOf('lease', kv.key),
    owner: stored.owner,
    token: leaseToken(stored, kv.mod_revision, base),
    acquiredAt: stored.acquiredAt,
    expiresAt: stored.expiresAt,
  };
}

/**
 * Up to `limit` entries of `[start, end)` that `keep` maps to a value, in key order (or reversed),
 * reading pages of `limit` at the first page's revision until enough are found or the range ends.
 */
export async function collect<T>(
  client: EtcdClientLike,
  range: { start: Buffer; end: Buffer },
  limit: number,
  reverse: boolean,
  keep: (kv: IKeyValue) => T | null,
): Promise<T[]> {
  const out: T[] = [];
  let { start, end } = range;
  let revision: string | undefined;
  while (out.length < limit && Buffer.compare(start, end) < 0) {
    const want = limit - out.length;
    const request: IRangeRequest = { key: start, range_end: end, limit: want };
    if (reverse) Object.assign(request, { sort_order: 'Descend', sort_target: 'Key' });
    if (revision !== undefined) request.revision = revision;
    const page = await client.kv.range(request);
    revision ??= page.header.revision;
    for (const kv of page.kvs) {
      const kept = keep(kv);
      if (kept !== null) out.push(kept);
    }
    if (!page.more || page.kvs.length === 0) break;
    const last = page.kvs[page.kvs.length - 1]!.key;
    if (reverse) end = last;
    else start = Buffer.concat([last, Buffer.from([0])]);
  }
  return out;
}

/** scan: records under the prefix, from the cursor, skipping expired ones. */
export function scanRecords(
  client: EtcdClientLike,
  layout: Layout,
  scan: NormalizedScan,
  now: number,
): Promise<StoredRecord[]> {
  let { start, end } = layout.range('rec', scan.prefix);
  if (scan.after !== undefined) {
    const cursor = layout.record(scan.after);
    if (!scan.reverse) {
      const next = Buffer.concat([cursor, Buffer.from([0])]);
      if (Buffer.compare(next, start) > 0) start = next;
    } else if (Buffer.compare(cursor, end) < 0) {
      end = cursor;
    }
  }
  return collect(client, { start, end }, scan.limit, scan.reverse, (kv) => {
    const record = decodeRecord(kv.value);
    if (record.expiresAt !== null && record.expiresAt <= now) return null;
    return { key: layout.keyOf('rec', kv.key), value: record.value, expiresAt: record.expiresAt };
  });
}

/**
 * count: every record key under the prefix (count_only: etcd counts, nothing is sent back) minus
 * the expired ones, found among the small rec-ttl stamps under the same prefix — both Ranges in
 * one Txn, so at one revision. rec-ttl/<key> exists exactly for the records with a ttl (put,
 * delete and sweep write both keys in one transaction). Cost: the ttl records under the prefix.
 */
export async function countRecords(
  client: EtcdClientLike,
  layout: Layout,
  prefix: string,
  now: number,
): Promise<number> {
  const records = layout.range('rec', prefix);
  const ttls = layout.range('rec-ttl', prefix);
  const response = await client.kv.txn({
    success: [
      { request_range: { key: records.start, range_end: records.end, count_only: true } },
      { request_range: { key: ttls.start, range_end: ttls.end } },
    ],
  });
  const [all, stamps] = response.responses;
  let expired = 0;
  for (const kv of stamps!.response_range.kvs) if (Number(kv.value.toString()) <= now) expired++;
  return Number(all!.response_range.count) - expired;
}
