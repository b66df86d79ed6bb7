import { MAX_BATCH } from '../store/validate.js';
import { gateScope, keys, type OccurrenceId } from './keys.js';
import type { NodeState } from './node-state.js';

/**
 * Per occurrence, whether it is on record in a way that gets it run or closes it: a history record
 * of its first attempt (run, or skipped — also a run whose finish came after its lease lapsed), an
 * in-flight record (recovery takes it), or a queued run of its overlap gate (its own pending
 * record, or the gate's one record as earlier builds wrote it, naming this fire time).
 *
 * Read in two rounds of `getMany` batches: history and in-flight records first — what an occurrence
 * that ran or runs has, nearly every one a node asks about after the grace — then the two queue
 * records only for those with neither (half the keys of reading all four at once; a node asks about
 * every occurrence preferred to another node). A record consumed between the rounds (a queued run
 * started) can only make the answer "not on record", which costs a claim that the occurrence's lease
 * refuses, never a second run; "on record" always rests on a record that existed.
 */
export async function accountedFor(s: NodeState, occs: readonly OccurrenceId[]): Promise<boolean[]> {
  const ran = await read(
    s,
    occs.flatMap((o) => [keys.history(o, 1), keys.inflight(o)]),
  );
  const on = occs.map((_, i) => ran[2 * i] != null || ran[2 * i + 1] != null);
  const rest = occs.flatMap((_, i) => (on[i] ? [] : [i]));
  if (rest.length === 0) return on;
  const queued = await read(
    s,
    rest.flatMap((i) => {
      const o = occs[i]!;
      return [
        keys.pending(o.job, gateScope(o), o.shard, o.fireTime),
        keys.pendingOfGate(o.job, gateScope(o), o.shard),
      ];
    }),
  );
  rest.forEach((i, at) => {
    const [pending, legacy] = [queued[2 * at], queued[2 * at + 1]];
    if (pending != null) on[i] = true;
    else if (legacy != null) {
      try {
        on[i] = (JSON.parse(legacy) as { fireTime?: number }).fireTime === occs[i]!.fireTime;
      } catch {
        on[i] = false;
      }
    }
  });
  return on;
}

/** `getMany` of `wanted` in batches of MAX_BATCH. */
async function read(s: NodeState, wanted: readonly string[]): Promise<(string | null)[]> {
  const found: (string | null)[] = [];
  for (let i = 0; i < wanted.length; i += MAX_BATCH)
    found.push(...(await s.store.getMany(wanted.slice(i, i + MAX_BATCH))));
  return found;
}
