import type { Lease } from '../../store/types.js';
import type { Candidate, Job } from '../internal-types.js';
import type { NodeState } from '../node-state.js';
import type { InflightRecord } from '../run/run-records.js';
import { inflightOf, occurrenceEnded } from './dead-attempt.js';
import { MAX_EARLY_WAIT_MS } from './early-grant.js';

/**
 * What a claim that may come after a run of its fire time finds: won at least a lease after the
 * fire time (a run claimed at the fire time, granted up to MAX_EARLY_WAIT_MS early, cannot have
 * lost its lease sooner). A node whose cursor lagged (a partition, a pause), or whose claim was
 * held back (queued for another node's spread grace, or unanswered through an outage), claims
 * such a fire time afresh once the earlier run's lease lapsed. On-time claims — nearly all of
 * them — read nothing; a recovery knows its attempt already, a backfill looks itself.
 *  - `deadRun`: that run's in-flight record — it died, and this claim is its recovery; without
 *    this look-up it ran attempt 1 again with a higher token (simulator seed 2560 of 3,000), or,
 *    the gate held, recorded it skipped over the dead run (1124; overlap.ts);
 *  - `ended` (set once the history was read): no in-flight record, and an attempt has a final
 *    history record — the run ended, but stored its outcome only after its lease lapsed, so the
 *    store refused its "done" hold and the occurrence was free to win (chaos soak seed
 *    149154046: a 40 s store outage during
 *    a run; two nodes whose claims had waited through it ran its three shards again, attempt 1,
 *    200 ms after the success was stored).
 * The in-flight record is read first: the finishing batch deletes it and stores the outcome in
 * one write, so a finish landing between the two reads shows as a dead run (a legal recovery,
 * at-least-once), never as nothing at all.
 */
export async function lateLook(
  s: NodeState,
  job: Job,
  c: Candidate,
  lease: Lease,
): Promise<{ deadRun?: InflightRecord; ended?: boolean }> {
  if ((c.source === 'recover' && !c.unstarted) || c.source === 'backfill') return {};
  if (lease.acquiredAt - c.occ.fireTime < job.spec.lockAtMostForMs - MAX_EARLY_WAIT_MS) return {};
  const deadRun = await inflightOf(s, c.occ);
  return deadRun ? { deadRun } : { ended: await occurrenceEnded(s, c.occ) };
}
