import type { IKeyValue, IRequestOp, ITxnRequest, ITxnResponse } from 'etcd3';
import type { NormalizedWriteOp } from '../validate.js';
import {
  decodeLease,
  decodeRecord,
  encodeLease,
  encodeRecord,
  type Layout,
  leaseToken,
  padTime,
} from './layout.js';
import {
  del,
  type EtcdClientLike,
  get,
  only,
  previous,
  put,
  txnOf,
  unchangedSince,
  ungrouped,
} from './txn.js';

/**
 * apply — a batch of record puts, record deletes and lease releases, in order, as one etcd
 * transaction (put, delete and release are one-op batches of it).
 *
 * Takes     the validated ops; the store time `now`; the fence base; and, when the batch releases
 *           leases or compare-and-deletes records, those lease keys and record keys as read in
 *           one snapshot at `revision` (absent = undefined).
 * Sends     one Txn of the batch's final writes, at most one per etcd key (etcd refuses a key
 *           twice in a transaction; the ops are folded in order first, so later ops see earlier
 *           ones). Compare: none of the leases it rewrites, and none of the records whose
 *           compare-and-delete it decided from the read, changed since `revision`.
 *   put      put rec/<key> "<exp>|<value>"; with a ttl also rec-ttl/<key> and the rec-exp index
 *            entry, without one delete rec-ttl/<key>.
 *   delete   delete rec/<key> and rec-ttl/<key>, asking etcd for the previous record (prev_kv):
 *            "did it exist unexpired?" is answered from what the transaction itself removed, so it
 *            needs no read and two racing deletes cannot both see the record.
 *   delete with ifValue (compare-and-delete) — decided from what the batch itself wrote to the
 *            key, else from the record as read: a live record holding exactly ifValue is deleted
 *            as above (its answer again from prev_kv, so a record deleted by someone else since
 *            the read answers false); any other record is not written at all. The compare makes
 *            the read's decision hold at commit: a record created or rewritten since fails it
 *            (read again, retry); one deleted since passes, harmlessly — it did not hold ifValue
 *            at commit either, and a delete of it finds no prev_kv.
 *   release  if the token holds the unexpired lease: put the lease back with expiresAt holdUntil
 *            (and its index entry) when holdUntil > now, else as an expired tombstone (expiresAt
 *            0) that sweep removes later — never a delete, so the compare above sees every change.
 * Returns   per op, in order: put true; delete whether the record existed unexpired (folded with
 *           the batch's earlier ops on that key); release whether the token still held the lease.
 *           `undefined` when the compare failed: a lease changed since the read; the caller reads
 *           again and retries the whole batch.
 *
 * Atomic, all or nothing: one etcd transaction is one revision. A release's decision is made on
 * the read snapshot and committed only if none of those leases changed since (optimistic
 * concurrency on mod_revision), so of racing releases of one token exactly one answers true.
 */
export interface WritePlan {
  txn: ITxnRequest;
  /** The results, from the committed transaction's response; `undefined` when it did not commit. */
  results(response: ITxnResponse): boolean[] | undefined;
}

/** Decided by the committed transaction: the record the key's write replaced was live (and held `ifValue`). */
type Result = boolean | { prior: string; ifValue?: string };

interface RecordState {
  /** Whether the batch knows the record's state without asking etcd (an earlier op set it). */
  known: boolean;
  live: boolean;
  /** The value an earlier put of the batch left (when known and live). */
  value?: string;
  final: { value: string; ttlMs: number | undefined } | null;
  needsPrior: boolean;
  /** Whether the batch writes the key (a compare-and-delete that does not match writes nothing). */
  written: boolean;
}

export function planWrites(
  layout: Layout,
  ops: readonly NormalizedWriteOp[],
  now: number,
  base: number,
  leases: Map<string, IKeyValue | undefined>,
  revision: string | undefined,
  read: Map<string, IKeyValue | undefined> = new Map(),
): WritePlan {
  const records = new Map<string, RecordState>();
  /** Record keys whose compare-and-delete was decided from `read`: the commit compares them. */
  const decidedFromRead = new Set<string>();
  const held = new Map<string, { expiresAt: number; token: number; acquiredAt: number; owner: string }>();
  const touched = new Set<string>();
  for (const [key, kv] of leases) {
    if (kv === undefined) continue;
    const stored = decodeLease(kv.value);
    held.set(key, { ...stored, token: leaseToken(stored, kv.mod_revision, base) });
  }
  const results: Result[] = ops.map((op) => {
    if (op.op === 'release') {
      const lease = held.get(op.key);
      if (lease === undefined || lease.token !== op.token || lease.expiresAt <= now) return false;
      lease.expiresAt = op.holdUntil !== undefined && op.holdUntil > now ? op.holdUntil : 0;
      touched.add(op.key);
      return true;
    }
    let record = records.get(op.key);
    if (record === undefined) {
      record = { known: false, live: false, final: null, needsPrior: false, written: false };
      records.set(op.key, record);
    }
    if (op.op === 'put') {
      Object.assign(record, {
        known: true,
        live: true,
        value: op.value,
        final: { value: op.value, ttlMs: op.ttlMs },
        written: true,
      });
      return true;
    }
    let result: Result;
    if (op.ifValue === undefined) {
      result = record.known ? record.live : { prior: op.key };
    } else if (record.known) {
      if (!record.live || record.value !== op.ifValue) return false;
      result = true;
    } else {
      if (!read.has(op.key)) throw new Error(`compare-and-delete of ${op.key} without its record read`);
      decidedFromRead.add(op.key);
      const kv = read.get(op.key);
      const stored = kv === undefined ? undefined : decodeRecord(kv.value);
      const live = stored !== undefined && (stored.expiresAt === null || stored.expiresAt > now);
      if (stored === undefined || !live || stored.value !== op.ifValue) return false; // not written
      result = { prior: op.key, ifValue: op.ifValue };
    }
    if (!record.known) record.needsPrior = true;
    Object.assign(record, { known: true, live: false, value: undefined, final: null, written: true });
    return result;
  });

  const writes: IRequestOp[] = [];
  const priorAt = new Map<string, number>();
  for (const [key, record] of records) {
    if (!record.written) continue;
    if (record.needsPrior) priorAt.set(key, writes.length);
    if (record.final === null) {
      writes.push(del(layout.record(key), record.needsPrior), del(layout.recordTtl(key)));
      continue;
    }
    const { value, ttlMs } = record.final;
    const expiresAt = ttlMs === undefined ? null : now + ttlMs;
    writes.push(put(layout.record(key), encodeRecord(value, expiresAt), record.needsPrior));
    if (expiresAt === null) {
      writes.push(del(layout.recordTtl(key)));
    } else {
      writes.push(put(layout.recordTtl(key), Buffer.from(padTime(expiresAt))));
      writes.push(put(layout.recordExp(expiresAt, key), Buffer.alloc(0)));
    }
  }
  for (const key of touched) {
    const lease = held.get(key)!;
    writes.push(
      put(
        layout.lease(key),
        encodeLease(lease.expiresAt, String(lease.token), lease.acquiredAt, lease.owner),
      ),
    );
    if (lease.expiresAt > 0) writes.push(put(layout.leaseExp(lease.expiresAt, key), Buffer.alloc(0)));
  }
  const compared = [
    ...[...touched].map((key) => layout.lease(key)),
    ...[...decidedFromRead].map((key) => layout.record(key)),
  ];
  const compares = revision === undefined || compared.length === 0 ? [] : unchangedSince(compared, revision);
  const txn = txnOf(compares, writes);
  return {
    txn,
    results(response) {
      if (!response.succeeded) return undefined;
      const responses = ungrouped(txn.success!, response.responses);
      return results.map((result) => {
        if (typeof result === 'boolean') return result;
        const prior = previous(responses[priorAt.get(result.prior)!]);
        if (prior === undefined) return false;
        const { value, expiresAt } = decodeRecord(prior.value);
        if (result.ifValue !== undefined && value !== result.ifValue) return false;
        return expiresAt === null || expiresAt > now;
      });
    },
  };
}

/** A write that keeps losing its compare to other writers gives up after this many tries. */
const MAX_ATTEMPTS = 100;

/**
 * Every write of records and releases ({@link planWrites}): read the leases the batch releases and
 * the records it compare-and-deletes (one Txn of Ranges, at one revision), then commit the batch
 * if none of those it decided on changed since; when one did, read again and retry, so each
 * attempt's answers come from one snapshot.
 */
export async function writeBatch(
  client: EtcdClientLike,
  layout: Layout,
  ops: readonly NormalizedWriteOp[],
  now: () => number,
  base: number,
): Promise<boolean[]> {
  const releaseKeys = [...new Set(ops.flatMap((op) => (op.op === 'release' ? [op.key] : [])))];
  const recordKeys = [
    ...new Set(ops.flatMap((op) => (op.op === 'delete' && op.ifValue !== undefined ? [op.key] : []))),
  ];
  for (let attempt = 1; ; attempt++) {
    const leases = new Map<string, IKeyValue | undefined>();
    const records = new Map<string, IKeyValue | undefined>();
    let revision: string | undefined;
    if (releaseKeys.length + recordKeys.length > 0) {
      const reads = [
        ...releaseKeys.map((key) => get(layout.lease(key))),
        ...recordKeys.map((key) => get(layout.record(key))),
      ];
      const txn = txnOf([], reads);
      const response = await client.kv.txn(txn);
      const found = ungrouped(txn.success!, response.responses);
      releaseKeys.forEach((key, i) => {
        leases.set(key, only(found[i]));
      });
      recordKeys.forEach((key, i) => {
        records.set(key, only(found[releaseKeys.length + i]));
      });
      revision = response.header.revision;
    }
    const plan = planWrites(layout, ops, now(), base, leases, revision, records);
    const results = plan.results(await client.kv.txn(plan.txn));
    if (results !== undefined) return results;
    if (attempt >= MAX_ATTEMPTS)
      throw new Error('a write kept conflicting with other writers of the same leases');
    // Racing writers of one lease: all but one retry; spread them out after a few rounds.
    if (attempt > 3) await new Promise((resolve) => setTimeout(resolve, Math.random() * attempt));
  }
}
