import { accountedShard } from '../due/pending-shards.js';
import type { Candidate } from '../internal-types.js';
import type { NodeState } from '../node-state.js';
import { accountedFor } from './on-record.js';
import type { Watch } from './watch.js';

/**
 * The batch without the takeovers (claims after another node's grace, spread.ts) of occurrences
 * already on record — run or running elsewhere, recorded skipped, or queued behind their gate
 * (on-record.ts: a few keys each, read in `getMany` batches). Each node took over every other
 * node's share blindly after the grace: with 1,000 jobs due together on three nodes, every fire
 * time cost each node ~666 more lease attempts, each refused under a row lock and then watched
 * (watch.ts) for a look after the holder's lease. What is not on record (the preferred node dead,
 * stuck or not yet started) is claimed as before; the claim decides. If the read fails, nothing
 * is dropped: the claims go out and meet the store's answer (or its failure) as before.
 */
export async function withoutAccounted(s: NodeState, watch: Watch, batch: Candidate[]): Promise<Candidate[]> {
  const takeovers = batch.filter((c) => c.takeover && c.settleOnly === undefined);
  if (takeovers.length === 0) return batch;
  let onRecord: boolean[];
  try {
    onRecord = await accountedFor(
      s,
      takeovers.map((c) => c.occ),
    );
  } catch {
    return batch;
  }
  const drop = new Set(takeovers.filter((_, i) => onRecord[i]));
  // As if refused (due/move-past.ts), or a remembered shard not offered again (due/pending-shards.ts).
  for (const c of drop)
    if (c.movePast !== undefined) watch.refused(c);
    else accountedShard(s, c);
  return drop.size === 0 ? batch : batch.filter((c) => !drop.has(c));
}
