import { decodeLease, encodeLease, type Layout, leaseToken } from './layout.js';
import { type EtcdClientLike, put, unchanged } from './txn.js';

/**
 * extend — move a held lease's end to max(expiresAt, now + leaseMs), only for the token that holds
 * it. Never shortens: a late extend must not cut a release's hold (lockAtLeastFor, "done") short
 * (see Store.extend). When the lease already runs past now + leaseMs nothing is written: the
 * answer is the expiry read, which held under this token at the instant of the read.
 *
 * Reads the lease (one Range), checks token and expiry against the store time, and writes the new
 * value (token now in decimal: the rewrite changes the key's mod_revision, see ./layout.ts) with
 * its new expiry index entry in one Txn whose compare is "the lease is still the version read"
 * (mod_revision unchanged). If another client changed it in between (a take-over after expiry, a
 * release) the compare fails and the decision is made again on a fresh read, so an expired lease is
 * never revived over another holder and a released one never comes back.
 *
 * Returns the new expiresAt, or null when the lease is gone (absent, expired, other token).
 */
export async function extendLease(
  client: EtcdClientLike,
  layout: Layout,
  key: string,
  token: number,
  leaseMs: number,
  now: () => number,
  base: number,
): Promise<number | null> {
  const leaseKey = layout.lease(key);
  for (let attempt = 0; ; attempt++) {
    const kv = (await client.kv.range({ key: leaseKey })).kvs[0];
    if (kv === undefined) return null;
    const stored = decodeLease(kv.value);
    const at = now();
    if (leaseToken(stored, kv.mod_revision, base) !== token || stored.expiresAt <= at) return null;
    const expiresAt = at + leaseMs;
    if (expiresAt <= stored.expiresAt) return stored.expiresAt;
    const response = await client.kv.txn({
      compare: [unchanged(kv)],
      success: [
        put(leaseKey, encodeLease(expiresAt, String(token), stored.acquiredAt, stored.owner)),
        put(layout.leaseExp(expiresAt, key), Buffer.alloc(0)),
      ],
    });
    if (response.succeeded) return expiresAt;
    if (attempt >= 100)
      throw new Error(`extend of ${JSON.stringify(key)} kept conflicting with other writers`);
  }
}
