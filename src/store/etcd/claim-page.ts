import type { ICompare, IRequestOp, ITxnRequest, ITxnResponse } from 'etcd3';
import { invalidArgument } from '../../core/errors.js';
import type { LeaseRequest, PageClaim } from '../types.js';
import type { NormalizedPageOp } from '../validate-page.js';
import { decodeLease, encodeLease, encodeRecord, type Layout, padTime, TOKEN_SPREAD } from './layout.js';
import { absent, del, type EtcdClientLike, get, only, put, txnOf, ungrouped } from './txn.js';

/**
 * claimPage — a lease and a page of record puts, creates and moves, as one etcd transaction.
 *
 * Takes     the lease request; validated ops (every record key at most once, so no etcd key is
 *           written twice); the store time `now`; the fence base as written in `<p>/fence`.
 * Sends     one Txn. Compare: `value(fence) == base` and the lease branch — `version(lease) == 0`
 *           (absent) on the first try, `value(lease) < pad(now + 1)` (expired, see ./layout.ts)
 *           when the first try found an expired lease. Success: put the lease with token field
 *           `#0` and its expiry index entry, then per op (grouped to fit --max-txn-ops, ./txn.ts):
 *   put      put rec/<key> "<exp>|<value>", rec-ttl/<key> and the rec-exp entry with a ttl, else
 *            delete rec-ttl/<key> — exactly apply's put (./writes.ts).
 *   create   nested Txn: compare version(rec) == 0 -> the put's writes; else nested Txn: compare
 *            value(rec) < pad(now + 1) (expired) -> the put's writes; a live record: nothing.
 *   move     nested Txn: compare value(rec/<from>) > pad(now + 1) (live: a ttl after now, or none —
 *            the value then starts with `|`, above every digit; a missing key fails a value
 *            compare) -> delete rec/<from> and rec-ttl/<from>, and the put's writes for `to`
 *            (replacing whatever `to` held); else nothing.
 *           Failure: read the lease and the fence.
 * Returns   the lease and per op: put true, create/move whether its nested compare held; or, when
 *           the outer compare failed, what to do next (from the failure branch's reads, at the
 *           Txn's revision): `held` (a live lease: nothing was written, the answer is "not
 *           granted"), `expired` / `absent` (try again with that lease branch), `base` (the fence
 *           changed: read it again).
 *
 * Atomic and exactly-once, with no read-then-write for any record: etcd applies a transaction as
 * one revision with no other write in between, and evaluates every compare of it — nested ones
 * included — on the state before it, server-side. So each create's and move's condition is
 * judged and acted on inside the same revision as the grant, and of racing pages that want one
 * `from` or one create key the first to commit takes it and every later one's compare sees its
 * write. The whole page sits in the success branch of the lease compare: no grant, no write.
 *
 * Round trips: one when the lease key is absent (a fresh page) or held (the failure branch says
 * so); two when it holds an expired lease (a page re-claimed after its node died). One is not
 * possible there: no single compare means "absent or expired" (a value compare on a missing key
 * always fails), and a second lease branch would have to carry the whole page again, doubling the
 * request. The second try is a fresh transaction whose compare is again evaluated by the server,
 * so a lease granted or swept in between fails it and is read again.
 *
 * Token: (base + revision) * 1000 + 0, revision being the committing transaction's own (written
 * as `#0`, see ./layout.ts): revisions are store-wide and strictly increase with every write, so
 * it is above every token this store granted before, for any key, whichever try commits.
 */
export function pageTxn(
  layout: Layout,
  lease: LeaseRequest,
  ops: readonly NormalizedPageOp[],
  now: number,
  base: string,
  branch: 'absent' | 'expired',
): ITxnRequest {
  const expired = Buffer.from(padTime(now + 1));
  const leaseKey = layout.lease(lease.key);
  const writes = (key: string, value: string, ttlMs: number | undefined, replacing: boolean) => {
    const expiresAt = ttlMs === undefined ? null : now + ttlMs;
    const out = [put(layout.record(key), encodeRecord(value, expiresAt))];
    if (expiresAt !== null)
      out.push(
        put(layout.recordTtl(key), Buffer.from(padTime(expiresAt))),
        put(layout.recordExp(expiresAt, key), Buffer.alloc(0)),
      );
    // A missing record has no rec-ttl stamp either (they are written and deleted together).
    else if (replacing) out.push(del(layout.recordTtl(key)));
    return out;
  };
  const perOp = ops.map((op): IRequestOp => {
    if (op.op === 'put') return { request_txn: { success: writes(op.key, op.value, op.ttlMs, true) } };
    if (op.op !== 'move') {
      const key = layout.record(op.key);
      const overExpired: IRequestOp = {
        request_txn: {
          compare: [{ key, target: 'Value', result: 'Less', value: expired }],
          success: writes(op.key, op.value, op.ttlMs, true),
          failure: [],
        },
      };
      return {
        request_txn: {
          compare: [absent(key)],
          success: writes(op.key, op.value, op.ttlMs, false),
          failure: [overExpired],
        },
      };
    }
    const from = layout.record(op.from);
    return {
      request_txn: {
        compare: [{ key: from, target: 'Value', result: 'Greater', value: expired }],
        success: [del(from), del(layout.recordTtl(op.from)), ...writes(op.to, op.value, op.ttlMs, true)],
        failure: [],
      },
    };
  });
  const compares: ICompare[] = [
    { key: layout.fence, target: 'Value', result: 'Equal', value: Buffer.from(base) },
    branch === 'absent'
      ? absent(leaseKey)
      : { key: leaseKey, target: 'Value', result: 'Less', value: expired },
  ];
  const grant = [
    put(leaseKey, encodeLease(now + lease.leaseMs, '#0', now, lease.owner)),
    put(layout.leaseExp(now + lease.leaseMs, lease.key), Buffer.alloc(0)),
  ];
  return { ...txnOf(compares, [...grant, ...perOp]), failure: [get(leaseKey), get(layout.fence)] };
}

export type PageOutcome = PageClaim | 'held' | 'absent' | 'expired' | 'base';

export function pageResult(
  sent: ITxnRequest,
  response: ITxnResponse,
  lease: LeaseRequest,
  ops: readonly NormalizedPageOp[],
  now: number,
  base: string,
): PageOutcome {
  if (!response.succeeded) {
    const [leaseKv, fence] = response.responses.map(only);
    if (fence?.value.toString('utf8') !== base) return 'base';
    if (leaseKv === undefined) return 'absent';
    return decodeLease(leaseKv.value).expiresAt > now ? 'held' : 'expired';
  }
  const revision = Number(response.header.revision);
  const responses = ungrouped(sent.success!, response.responses).slice(2);
  const results = ops.map((op, i) => {
    if (op.op === 'put') return true;
    const txn = responses[i]!.response_txn;
    return txn.succeeded || (op.op === 'create' && txn.responses[0]!.response_txn.succeeded);
  });
  const token = (Number(base) + revision) * TOKEN_SPREAD;
  return {
    lease: { key: lease.key, owner: lease.owner, token, acquiredAt: now, expiresAt: now + lease.leaseMs },
    results,
  };
}

/** What {@link claimPage} needs of the store: its client, layout, clock and fence base. */
export interface PageContext {
  client: EtcdClientLike;
  layout: Layout;
  now(): number;
  base(): string;
  /** Reads (or re-creates) the fence base after a data loss changed it. */
  reloadBase(): Promise<void>;
  requestLimit: { bytes: number; setting: string };
}

/**
 * The claim (see the header): tries the "absent" lease branch, and follows what a failed try read
 * — a held lease ends it, an expired one is tried with the "expired" branch, a changed fence base
 * is read again. A create's value is sent twice (in both of its branches), so it counts twice
 * towards the request limit here, on top of BaseStore's check.
 */
export async function claimPage(
  ctx: PageContext,
  lease: LeaseRequest,
  ops: readonly NormalizedPageOp[],
): Promise<PageClaim> {
  let bytes = 0;
  for (const op of ops)
    bytes +=
      op.op === 'move'
        ? Buffer.byteLength(op.from) + Buffer.byteLength(op.to) + Buffer.byteLength(op.value)
        : Buffer.byteLength(op.key) + Buffer.byteLength(op.value) * (op.op === 'create' ? 2 : 1);
  if (bytes > ctx.requestLimit.bytes)
    throw invalidArgument(
      `etcd store: claimPage of ${bytes} bytes (a create's value counts twice: it is sent in both of its branches) is more than the server takes in one request (${ctx.requestLimit.bytes} bytes: ${ctx.requestLimit.setting}); store less per value or batch`,
    );
  let branch: 'absent' | 'expired' = 'absent';
  let reloads = 0;
  for (let attempt = 1; ; attempt++) {
    const now = ctx.now();
    const base = ctx.base();
    const txn = pageTxn(ctx.layout, lease, ops, now, base, branch);
    const outcome = pageResult(txn, await ctx.client.kv.txn(txn), lease, ops, now, base);
    if (outcome === 'held') return { lease: null, results: ops.map(() => false) };
    if (typeof outcome === 'object') return outcome;
    if (outcome === 'base') {
      if (++reloads > 2)
        throw new Error(
          `${ctx.layout.fence.toString()} keeps changing; is another program using the prefix?`,
        );
      await ctx.reloadBase();
    } else branch = outcome;
    if (attempt >= 100) throw new Error('a page claim kept conflicting with other writers of its lease');
  }
}
