import type { StoredRecord } from '../../store/types.js';
import { CONSUMED, consumeRequest, settling } from '../claim/backfill-claim.js';
import type { Candidate } from '../internal-types.js';
import { keys } from '../keys.js';
import type { NodeState } from '../node-state.js';

/** A backfill request as `backfill()` writes it (`ctl|bf|<job>|<schedule>|<fireTime>|<shard>`, control/backfill.ts). */
export interface BackfillRequest {
  job: string;
  scheduleId?: string;
  fireTime: number;
  shard?: number;
  /** Store time of the `backfill()` call. */
  requestedAt: number;
}

/**
 * Turns backfill requests into claims, in order: per stream (job, stored schedule, shard) only
 * the oldest request a poll read is offered — the next one once the one before it is consumed,
 * which its run's start batch does (claim.ts; the request is then a marker, skipped here). So a stream's backfill runs start in fire-time
 * order, one at a time; under overlap `allow` they may then overlap, under any other policy the
 * next one waits for the gate (claim/overlap.ts gives its claim back while a run of the gate goes,
 * and the next poll offers it again). Every node offers the same request; the occurrence lease
 * decides (claim/backfill-claim.ts: a fire time found run is consumed, never run). A job this node
 * does not define, or that is paused (or its stored schedule), is left to the nodes that run it.
 * Costs nothing while no request is stored: the poll's one scan of `ctl|` finds none.
 */
export function backfillCandidates(
  s: NodeState,
  records: readonly StoredRecord[],
  slots: number,
): Candidate[] {
  const out: Candidate[] = [];
  const seen = new Set<string>();
  // When this node first read each request (claim/gated-runs.ts: a backfill run of a page-claimed
  // stored schedule starts no sooner than BACKFILL_SETTLE_MS after that).
  const now = s.storeClock.estimate();
  const firstRead = new Map<string, number>();
  for (const r of records) if (r.value !== CONSUMED) firstRead.set(r.key, s.backfillSeen.get(r.key) ?? now);
  s.backfillSeen = firstRead;
  for (const r of records) {
    if (out.length >= slots) break;
    // A consumed request's marker (claim/backfill-claim.ts): its run is on record.
    if (r.value === CONSUMED) continue;
    let req: BackfillRequest;
    try {
      req = JSON.parse(r.value) as BackfillRequest;
    } catch {
      continue;
    }
    // Records come in key order: job, schedule, fire time, shard — the first of a stream is its oldest.
    const stream = `${req.job}\u0000${req.scheduleId ?? ''}\u0000${req.shard ?? ''}`;
    if (seen.has(stream)) continue;
    seen.add(stream);
    const job = s.defined.get(req.job);
    if (!job || s.paused.has(req.job)) continue;
    if (req.scheduleId !== undefined && s.pausedSchedules.has(req.scheduleId)) continue;
    const occ = { job: req.job, scheduleId: req.scheduleId, fireTime: req.fireTime, shard: req.shard };
    // A request whose key is not its occurrence's (written by another build) is left to expire.
    if (keys.backfillRequest(occ) !== r.key) continue;
    const seenAt = firstRead.get(r.key)!;
    if (settling(s, job, occ.scheduleId, seenAt, now)) continue;
    out.push({
      occ,
      source: 'backfill',
      // A stored schedule's data is read when the claim is won (claim/backfill-claim.ts).
      data: undefined,
      attempt: 1,
      gate: job.spec.overlap !== 'allow',
      // Consumed in the run's start batch, kept as a marker (not deleted, see CONSUMED_TTL_MS).
      startWrites: consumeRequest(occ),
      seenAt,
    });
  }
  return out;
}
