import type { Job } from '../internal-types.js';
import type { NodeState } from '../node-state.js';

/**
 * Whether the due entries of this job's stored schedules are claimed in pages (page-claims.ts) —
 * decided from the job's definition and the store alone, so every node decides alike and one
 * entry is never claimed both ways (a page's move and a per-occurrence lease would not exclude
 * each other). On a store that offers `claimPage`, for jobs whose per-schedule guarantees a page
 * keeps today: not sharded, overlap `skip` or `allow`, misfire `skip` or `run-once`. Sharded jobs,
 * overlap `queue`, `queue-all` and `replace` (pending records behind the gate) and misfire `catch-up`
 * (replays one after another) are claimed occurrence by occurrence, as before.
 */
export function claimsInPages(state: NodeState, job: Job): boolean {
  const { spec } = job;
  return (
    state.store.capabilities.pages === true &&
    spec.shards === undefined &&
    spec.overlap !== 'queue' &&
    spec.overlap !== 'queue-all' &&
    spec.overlap !== 'replace' &&
    spec.misfire !== 'catch-up'
  );
}
