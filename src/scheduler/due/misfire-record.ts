import { getManyInSlices } from '../../store/get-many.js';
import type { Source } from '../internal-types.js';
import { gateScope, keys } from '../keys.js';
import type { NodeState } from '../node-state.js';

/**
 * Of the shards asked about, per fire time: which are on record in a way that gets them run or
 * closes them (`accounted`: a pending record — queued behind its gate —, an in-flight record —
 * recovery takes it —, or a history entry of attempt 1), and whether the record says the fire
 * time was claimed (`claimed`: a pending or in-flight record, or in history a run or a skip a
 * claim made, {@link claimedBy}). The mark went past a claimed fire time because a shard of it
 * was claimed, not because a misfire or a pause skipped it, so a shard of it with no record and
 * no holder never ran. A node claims a sharded replay a shard at a time as permits and slots
 * allow, and its first shard queued behind its gate releases its lease (the pending record
 * holds it) and raises the mark: when that node died, the shards it still had to claim were
 * nowhere but in its memory (simulator, mix5 seed 139 of scripts/sweep.ts: `m5lim@+4 s` shards
 * 1-3, 4 shards under `maxConcurrency: 2`). Or a node won a replay's shards, started one and
 * crashed; by the time a node behind the mark looked, the fire time was past half a done hold
 * and their leases had lapsed (simulator, `pages,rep,rl,ps,cu,shp,mc`, seeds 175 and 352:
 * `shp@+9 s` shards 0 and 2). One getMany per 999 keys, a shard's three in one call, only for
 * the fire times asked about.
 */
export async function onRecord(
  state: NodeState,
  source: Source,
  asks: readonly [number, readonly (number | undefined)[]][],
): Promise<Map<number, { accounted: Set<number | undefined>; claimed: boolean }>> {
  const out = new Map<number, { accounted: Set<number | undefined>; claimed: boolean }>();
  if (asks.length === 0) return out;
  const scope = gateScope(source);
  const ask = asks.flatMap(([fireTime, shards]) =>
    shards.flatMap((shard) => {
      const occ = { job: source.job, scheduleId: source.scheduleId, fireTime, shard };
      return [keys.pending(source.job, scope, shard, fireTime), keys.inflight(occ), keys.history(occ, 1)];
    }),
  );
  const values = await getManyInSlices(state.store, ask, 3); // a shard's three keys together
  let at = 0;
  for (const [fireTime, shards] of asks) {
    const accounted = new Set<number | undefined>();
    let claimed = false;
    for (const shard of shards) {
      const [pending, inflight, history] = [
        values[at] ?? null,
        values[at + 1] ?? null,
        values[at + 2] ?? null,
      ];
      at += 3;
      if (pending !== null || inflight !== null || history !== null) accounted.add(shard);
      if (pending !== null || inflight !== null || claimedBy(history)) claimed = true;
    }
    out.set(fireTime, { accounted, claimed });
  }
  return out;
}

/**
 * Whether a history entry (as stored) says its shard was claimed: a run of it, or a skip that a
 * claim of that shard made (for overlap, superseded). A `paused`, `excluded`, `removed` or misfire
 * entry speaks for the whole fire time (a pause's span is written under shard 0 alone), so its
 * other shards are not owed.
 */
function claimedBy(value: string | null): boolean {
  if (value === null) return false;
  let e: { status?: string; reason?: string };
  try {
    e = JSON.parse(value) as typeof e;
  } catch {
    // Not an entry this code wrote: no evidence either way (the fire time is left as before).
    return false;
  }
  return e.status !== 'skipped' || e.reason === 'overlap' || e.reason === 'superseded';
}
