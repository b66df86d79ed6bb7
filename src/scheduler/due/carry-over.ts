import type { DueEntry } from './due-entry.js';

/** Entries kept across a read for the candidates they still hold (see `carryOver`), at most. */
export const MAX_CARRIED = 10_000;

/**
 * The entries a read returned (`fresh`), after the ones read before that still hold candidates
 * not offered (`planned`: shards waiting for slots, a fleet limit's permits or another node's
 * grace) and that this read did not return — moved on by a shard 0's claim (this node's or
 * another's), or a one-shot's ended. Nothing else holds those shards: the moved entry remembers
 * only the fire times of the last two leases, and offers them only for half a done hold
 * (pending-shards.ts, `pending`); a one-shot has no next entry at all. Dropped with the read —
 * any schedule's upsert elsewhere changes the revision and forces one — they were never run nor
 * recorded (simulator: a sharded job of eight one-shots under maxConcurrency 2, schedules
 * upserted meanwhile; 2-3 shards lost per seed). An entry the read returns again replaces its old
 * copy (planned afresh). Offering a moved entry's leftovers is safe: each is a claim of one
 * occurrence, refused where it ran. (An entry of a job that is not sharded is never kept: its one
 * candidate carries the move.)
 */
export function carryOver(
  planned: readonly DueEntry[],
  waiting: readonly DueEntry[],
  fresh: DueEntry[],
): DueEntry[] {
  if (planned.length === 0 && waiting.length === 0) return fresh;
  const read = new Set(fresh.map((e) => e.key));
  const kept: DueEntry[] = [];
  const seen = new Set<DueEntry>();
  for (const e of waiting) {
    // A limited job's, as it was (its entries were passed over by the read).
    if (read.has(e.key)) continue;
    kept.push(e);
    seen.add(e);
  }
  for (const e of planned) {
    if (seen.has(e) || read.has(e.key) || kept.length >= MAX_CARRIED) continue;
    // Only the shards that do not move the entry: it moved (or ended) already.
    e.plan = e.plan!.filter((c) => c.advance === undefined && c.settleOnly === undefined);
    if (e.plan.length > 0) kept.push(e);
  }
  return kept.length === 0 ? fresh : [...kept, ...fresh];
}
