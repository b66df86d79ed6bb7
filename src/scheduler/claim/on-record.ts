import { getManyInSlices } from '../../store/get-many.js';
import { gateScope, keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';

/** Records read per occurrence by {@link accountedFor}. */
const KEYS_PER_OCCURRENCE = 4;

/**
 * Per occurrence, whether it is on record in a way that gets it run or closes it: a history record
 * of its first attempt (run, or skipped — also a run whose finish came after its lease lapsed), an
 * in-flight record (recovery takes it), or a queued run of its overlap gate (its own pending
 * record, or the gate's one record as earlier builds wrote it, naming this fire time). Four keys
 * per occurrence, read in `getMany` batches.
 */
export async function accountedFor(s: NodeState, occs: readonly OccurrenceId[]): Promise<boolean[]> {
  const wanted = occs.flatMap((o) => [
    keys.history(o, 1),
    keys.inflight(o),
    keys.pending(o.job, gateScope(o), o.shard, o.fireTime),
    keys.pendingOfGate(o.job, gateScope(o), o.shard),
  ]);
  const found: (string | null | undefined)[] = await getManyInSlices(s.store, wanted, KEYS_PER_OCCURRENCE);
  return occs.map((o, i) => {
    const [history, inflight, pending, legacy] = found.slice(
      i * KEYS_PER_OCCURRENCE,
      (i + 1) * KEYS_PER_OCCURRENCE,
    );
    if ((history ?? null) !== null || (inflight ?? null) !== null || (pending ?? null) !== null) return true;
    if (legacy === undefined || legacy === null) return false;
    try {
      return (JSON.parse(legacy) as { fireTime?: number }).fireTime === o.fireTime;
    } catch {
      return false;
    }
  });
}
