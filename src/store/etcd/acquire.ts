import type { IRequestOp, ITxnRequest, ITxnResponse } from 'etcd3';
import type { Lease, LeaseRequest } from '../types.js';
import { encodeLease, type Layout, padTime, TOKEN_SPREAD } from './layout.js';
import { absent, put, txnOf, ungrouped } from './txn.js';

/**
 * acquire — lease every free or expired key of a batch, in one etcd transaction.
 *
 * Takes     distinct keys (BaseStore removes repeats), at most 1,000; the store time `now`; the
 *           fence base the store read from `<p>/fence` (as written there).
 * Sends     one Txn: compare `value(fence) == base` (so tokens are never drawn against a base that
 *           a data loss took away; on failure nothing is written and the store re-reads the base);
 *           success = per key i one nested Txn:
 *             compare version(lease) == 0        -> put lease, put its expiry index entry
 *             else: nested Txn compare value(lease) < pad(now + 1)   (expired: see ./layout.ts)
 *                                                -> put lease, put its expiry index entry
 *           (grouped to fit etcd's --max-txn-ops, see ./txn.ts).
 * Returns   per key the lease, or null when it is held; `undefined` for the whole batch when the
 *           fence base compare failed.
 *
 * Atomic: etcd applies a transaction as one revision with no other write in between, and each
 * key's "free or expired?" is a server-side compare inside it, so two clients can never both see
 * a key free: no read-then-write. The granted lease value carries `#i`, and its token is
 * (base + revision) * 1000 + i, where revision is the transaction's own (every key written by a
 * transaction gets it as its mod_revision); see ./layout.ts for why that strictly increases.
 */
export function acquireTxn(
  layout: Layout,
  requests: readonly LeaseRequest[],
  now: number,
  base: string,
): ITxnRequest {
  const expired = Buffer.from(padTime(now + 1));
  const perKey: IRequestOp[] = requests.map((r, i) => {
    const key = layout.lease(r.key);
    const grant = [
      put(key, encodeLease(now + r.leaseMs, `#${i}`, now, r.owner)),
      put(layout.leaseExp(now + r.leaseMs, r.key), Buffer.alloc(0)),
    ];
    return {
      request_txn: {
        compare: [absent(key)],
        success: grant,
        failure: [
          {
            request_txn: {
              compare: [{ key, target: 'Value', result: 'Less', value: expired }],
              success: grant,
              failure: [],
            },
          },
        ],
      },
    };
  });
  return txnOf([{ key: layout.fence, target: 'Value', result: 'Equal', value: Buffer.from(base) }], perKey);
}

export function acquireResult(
  sent: ITxnRequest,
  response: ITxnResponse,
  requests: readonly LeaseRequest[],
  now: number,
  base: string,
): (Lease | null)[] | undefined {
  if (!response.succeeded) return undefined;
  const revision = Number(response.header.revision);
  const responses = ungrouped(sent.success!, response.responses);
  return requests.map((r, i) => {
    const outer = responses[i]!.response_txn;
    const granted = outer.succeeded || outer.responses[0]!.response_txn.succeeded;
    if (!granted) return null;
    const token = (Number(base) + revision) * TOKEN_SPREAD + i;
    return { key: r.key, owner: r.owner, token, acquiredAt: now, expiresAt: now + r.leaseMs };
  });
}
