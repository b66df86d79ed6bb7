import type {
  ICompare,
  IKeyValue,
  IRangeRequest,
  IRangeResponse,
  IRequestOp,
  IResponseOp,
  ITxnRequest,
  ITxnResponse,
} from 'etcd3';

/**
 * The two calls oncely makes on an etcd client: the KV service's `range` and `txn`. An `etcd3`
 * `Etcd3` client satisfies it as it is (its `kv` property); anything else that speaks etcd's v3
 * KV API with the same message shapes does too.
 */
export interface EtcdClientLike {
  /** The client's KV service (`etcd3`'s `client.kv`). */
  kv: {
    /** One Range call (read keys). */
    range(request: IRangeRequest): Promise<IRangeResponse>;
    /** One Txn call (compare, then write). */
    txn(request: ITxnRequest): Promise<ITxnResponse>;
  };
}

/**
 * etcd's `--max-txn-ops` (default 128) bounds the ops of a transaction along every nesting path:
 * a list (compares, success or failure, whichever is longest) uses up its length, and a nested
 * transaction gets what is left. Batches larger than that are sent as nested, compare-less
 * (always applied) groups, which etcd applies as one revision, exactly like a flat list.
 */
export const MAX_TXN_OPS = 128;

/** The nested transactions {@link grouped} made, so {@link ungrouped} can undo them. */
const GROUPS = new WeakSet<IRequestOp>();

/** The ops a nested transaction uses up along its deepest path (0 for a plain op). */
function cost(op: IRequestOp): number {
  const txn = op.request_txn;
  if (txn === undefined) return 0;
  const lists = [txn.compare ?? [], txn.success ?? [], txn.failure ?? []];
  const own = Math.max(...lists.map((list) => list.length));
  const inner = [...(txn.success ?? []), ...(txn.failure ?? [])].map(cost);
  return own + Math.max(0, ...inner);
}

/**
 * `ops` as a list that fits `budget` (its length plus its deepest op's cost at most `budget`):
 * itself, or about √n nested groups, each fitted into what is left.
 */
export function grouped(ops: IRequestOp[], budget = MAX_TXN_OPS): IRequestOp[] {
  const inner = Math.max(0, ...ops.map(cost));
  if (ops.length + inner <= budget) return ops;
  const groups = Math.max(2, Math.min(Math.ceil(Math.sqrt(ops.length)), Math.floor((budget - inner) / 2)));
  if (budget - groups <= inner + 1)
    throw new Error(`a batch of ${ops.length} operations does not fit one etcd transaction`);
  const size = Math.ceil(ops.length / groups);
  const out: IRequestOp[] = [];
  for (let i = 0; i < ops.length; i += size) {
    const group: IRequestOp = { request_txn: { success: grouped(ops.slice(i, i + size), budget - groups) } };
    GROUPS.add(group);
    out.push(group);
  }
  return out;
}

/** The responses to `sent` (a {@link grouped} list), flattened back into the original ops' order. */
export function ungrouped(sent: IRequestOp[], responses: IResponseOp[]): IResponseOp[] {
  const out: IResponseOp[] = [];
  sent.forEach((op, i) => {
    if (GROUPS.has(op))
      out.push(...ungrouped(op.request_txn!.success!, responses[i]!.response_txn.responses));
    else out.push(responses[i]!);
  });
  return out;
}

export const put = (key: Buffer, value: Buffer, prevKv = false): IRequestOp => ({
  request_put: prevKv ? { key, value, prev_kv: true } : { key, value },
});
export const del = (key: Buffer, prevKv = false): IRequestOp => ({
  request_delete_range: prevKv ? { key, prev_kv: true } : { key },
});
export const get = (key: Buffer): IRequestOp => ({ request_range: { key } });

/** A transaction of `compares` and `success` (grouped to fit what the compares leave). */
export function txnOf(compares: ICompare[], success: IRequestOp[]): ITxnRequest {
  return { compare: compares, success: grouped(success, MAX_TXN_OPS - compares.length), failure: [] };
}

/** The one kv of a single-key range response, or `undefined` when the key is absent. */
export function only(response: IResponseOp | undefined): IKeyValue | undefined {
  return response?.response_range?.kvs[0];
}

/** The previous kv of a put or delete asked with prev_kv, or `undefined`. */
export function previous(response: IResponseOp | undefined): IKeyValue | undefined {
  return response?.response_put?.prev_kv ?? response?.response_delete_range?.prev_kvs[0] ?? undefined;
}

/**
 * Compares that hold only if none of `keys` (distinct) was created, changed or deleted after
 * `revision` — the revision of the read the caller's decision is based on. Up to
 * {@link MAX_COMPARES} keys get one exact compare each; more are covered by at most that many
 * compares over contiguous
 * key ranges (sorted), which can also fail because of a key between two of them: a spurious
 * conflict, answered by a retry, never a wrong answer. (Compares cannot be nested: a nested
 * transaction's failed compare only takes its own failure branch.)
 *
 * A key deleted after `revision` passes these compares (a range compare only sees keys that
 * exist). The etcd store relies on that being harmless: a release never deletes a lease key (it
 * writes an expired tombstone, see ./writes.ts), so only sweep deletes one, and only once it has
 * expired — a batch that then releases it again removes nothing anyone holds.
 */
/** Compares one transaction spends at most, leaving the rest of its op budget to the writes. */
const MAX_COMPARES = 32;

export function unchangedSince(keys: Buffer[], revision: string): ICompare[] {
  const next = String(BigInt(revision) + 1n);
  const single = (key: Buffer, rangeEnd?: Buffer): ICompare => ({
    key,
    ...(rangeEnd ? { range_end: rangeEnd } : {}),
    target: 'Mod',
    result: 'Less',
    mod_revision: next,
  });
  if (keys.length <= MAX_COMPARES) return keys.map((key) => single(key));
  const sorted = [...keys].sort(Buffer.compare);
  const size = Math.ceil(sorted.length / MAX_COMPARES);
  const compares: ICompare[] = [];
  for (let i = 0; i < sorted.length; i += size) {
    const last = sorted[Math.min(i + size, sorted.length) - 1]!;
    compares.push(single(sorted[i]!, Buffer.concat([last, Buffer.from([0])])));
  }
  return compares;
}

/** A compare that holds only while `kv` (as read) is still the key's current version. */
export function unchanged(kv: IKeyValue): ICompare {
  return { key: kv.key, target: 'Mod', result: 'Equal', mod_revision: kv.mod_revision };
}

/** A compare that holds only while `key` does not exist. */
export function absent(key: Buffer): ICompare {
  return { key, target: 'Version', result: 'Equal', version: 0 };
}
