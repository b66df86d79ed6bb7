import type { IKeyValue, IRequestOp } from 'etcd3';
import type { SweepResult } from '../types.js';
import { decodeLease, decodeRecord, type Layout } from './layout.js';
import { del, type EtcdClientLike, get, only, txnOf, unchangedSince, ungrouped } from './txn.js';

/**
 * sweep — delete at most `limit` expired leases and at most `limit` expired records.
 *
 * 1. One Txn of two Ranges over the expiry indexes (lease-exp, rec-exp), keys only, up to
 *    pad(now + 1) and at most `limit` each: only what is due is read, so the work is bounded.
 * 2. One Txn of Ranges reading the leases and records those entries name, at one revision R.
 * 3. One Txn deleting the expired leases (tombstones of released leases included), the expired
 *    records with their rec-ttl stamp, and every entry read in 1 (an entry whose lease or record
 *    was rewritten later is stale: the rewrite wrote an entry of its own). Compare: none of the
 *    leases and records it deletes changed since R, so a lease granted or a record written
 *    meanwhile is never removed; on a conflict the sweep starts over (a few times at most).
 *
 * The fence and schema keys are never touched. Counts: leases and records actually deleted.
 */
export async function sweepExpired(
  client: EtcdClientLike,
  layout: Layout,
  limit: number,
  now: () => number,
): Promise<SweepResult> {
  for (let attempt = 0; ; attempt++) {
    const at = now();
    const leaseDue = layout.dueRange('lease-exp', at);
    const recordDue = layout.dueRange('rec-exp', at);
    const due = await client.kv.txn({
      success: [
        { request_range: { key: leaseDue.start, range_end: leaseDue.end, limit, keys_only: true } },
        { request_range: { key: recordDue.start, range_end: recordDue.end, limit, keys_only: true } },
      ],
    });
    const leaseEntries = due.responses[0]!.response_range.kvs.map((kv) => kv.key);
    const recordEntries = due.responses[1]!.response_range.kvs.map((kv) => kv.key);
    if (leaseEntries.length === 0 && recordEntries.length === 0) return { leases: 0, records: 0 };
    const leaseKeys = [...new Set(leaseEntries.map((e) => layout.parseExp('lease-exp', e)[1]))];
    const recordKeys = [...new Set(recordEntries.map((e) => layout.parseExp('rec-exp', e)[1]))];
    const reads = [
      ...leaseKeys.map((k) => get(layout.lease(k))),
      ...recordKeys.map((k) => get(layout.record(k))),
    ];
    const readTxn = txnOf([], reads);
    const read = await client.kv.txn(readTxn);
    const found = ungrouped(readTxn.success!, read.responses).map(only);
    const deletes: IRequestOp[] = [...leaseEntries, ...recordEntries].map((entry) => del(entry));
    const guarded: Buffer[] = [];
    const expired = (kv: IKeyValue | undefined, expiresAt: (kv: IKeyValue) => number | null) => {
      if (kv === undefined) return false;
      const exp = expiresAt(kv);
      return exp !== null && exp <= at;
    };
    let leases = 0;
    leaseKeys.forEach((_, i) => {
      const kv = found[i];
      if (!expired(kv, (l) => decodeLease(l.value).expiresAt)) return;
      guarded.push(kv!.key);
      deletes.push(del(kv!.key));
      leases++;
    });
    let records = 0;
    recordKeys.forEach((key, i) => {
      const kv = found[leaseKeys.length + i];
      if (!expired(kv, (r) => decodeRecord(r.value).expiresAt)) return;
      guarded.push(kv!.key);
      deletes.push(del(kv!.key), del(layout.recordTtl(key)));
      records++;
    });
    const response = await client.kv.txn(
      txnOf(guarded.length === 0 ? [] : unchangedSince(guarded, read.header.revision), deletes),
    );
    if (response.succeeded) return { leases, records };
    if (attempt >= 5) return { leases: 0, records: 0 };
  }
}
