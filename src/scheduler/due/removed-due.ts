import type { StoredRecord, WriteOp } from '../../store/types.js';
import { type RemovedSkip, removedSkip } from '../control/removed-span.js';
import { parseDueEntry } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { jobOfDueValue } from './due-scan.js';

/**
 * Stale due entries about to be deleted (their stored schedule removed, or changed by an upsert)
 * whose start had come at `now` (store ms): fire times that fell due while their version was in
 * the store and never ran — they waited behind a claim that did not start, or a recovery, and the
 * schedule went first (simulator: three jobs, the fault mix, 5 nodes, seeds 114 and 233: a fire
 * time held back behind a started page whose node died, recovered only after the removal). Each
 * is recorded `removed`, with the fire times after it up to the change (control/removed-span.ts),
 * in one batch with its entry's delete: the record and the delete are stored together or not at
 * all (then the next read finds the entry again). Several nodes may do this for one entry: they
 * write the same history key. An entry whose fire time a claim's lease holds, unrecorded, is not
 * deleted yet: the claimant may have died (removedSkip's `held`), and a read after its lease
 * records it.
 *
 * Only unsharded jobs defined here. Cost: one audit read per such entry — stale entries whose
 * start had come are rare (a schedule removed while one of its fire times waited).
 */
export async function removedDue(
  s: NodeState,
  stale: readonly StoredRecord[],
  deletes: readonly WriteOp[],
  now: number,
): Promise<{ skips: { writes: WriteOp[]; event: RemovedSkip['event'] }[]; rest: WriteOp[] }> {
  const deleting = new Set(deletes.map((d) => d.key));
  const due = stale.flatMap((r) => {
    if (!deleting.has(r.key)) return [];
    const p = parseDueEntry(r.key);
    if (p.at > now) return [];
    const job = s.defined.get(jobOfDueValue(r.value));
    return job && job.spec.shards === undefined ? [{ key: r.key, job: job.spec.name, p }] : [];
  });
  if (due.length === 0) return { skips: [], rest: [...deletes] };
  const at = Math.round(s.storeClock.estimate());
  const skips = await Promise.all(
    due.map((d) => removedSkip(s, d.job, d.p.id, d.p.fireTime, d.p.fireTime - 1, 0, at)),
  );
  const coupled = new Set<string>();
  const out: { writes: WriteOp[]; event: RemovedSkip['event'] }[] = [];
  skips.forEach((skip, i) => {
    if (!skip) return;
    // Its fire time held by a claim's lease: the entry stays for a read after that lease.
    coupled.add(due[i]!.key);
    if (skip === 'held') return;
    out.push({ writes: [skip.write, { op: 'delete', key: due[i]!.key }], event: skip.event });
  });
  return { skips: out, rest: deletes.filter((d) => !coupled.has(d.key)) };
}
