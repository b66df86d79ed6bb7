import type { StoredRecord } from '../store/types.js';
import type { Claims } from './claim.js';
import { type Candidate, shardsOf } from './internal-types.js';
import { jobOfKey, type OccurrenceId } from './keys.js';
import type { NodeState } from './node-state.js';
import type { RunSource } from './types.js';

/** Turns what a poll read — trigger requests and queued runs — into claims. */
export class Requests {
  constructor(
    private readonly state: NodeState,
    private readonly claims: Claims,
  ) {}

  /** Manual trigger requests and queued (overlap 'queue') runs of jobs this node defines. */
  async claimRequests(requests: StoredRecord[], queued: StoredRecord[]): Promise<void> {
    const s = this.state;
    const candidates: Candidate[] = [];
    for (const r of requests) {
      const req = JSON.parse(r.value) as { id: string; job: string; requestedAt: number; data?: unknown };
      const job = s.defined.get(req.job);
      if (!job) continue;
      for (const shard of shardsOf(job)) {
        candidates.push({
          occ: { job: req.job, scheduleId: `manual:${req.id}`, fireTime: req.requestedAt, shard },
          source: 'manual',
          data: req.data,
          attempt: 1,
          gate: job.spec.overlap !== 'allow',
          consumes: r.key,
        });
      }
    }
    // One pending record per gate (job, stored schedule, shard).
    for (const r of queued) {
      const job = s.defined.get(jobOfKey(r.key));
      if (!job || s.paused.has(job.spec.name)) continue;
      const p = JSON.parse(r.value) as OccurrenceId & { data?: unknown; source: RunSource };
      candidates.push({
        occ: {
          job: p.job,
          scheduleId: p.scheduleId ?? undefined,
          fireTime: p.fireTime,
          shard: p.shard ?? undefined,
        },
        source: p.source,
        data: p.data,
        attempt: 1,
        gate: true,
        consumes: r.key,
        fromPending: true,
      });
    }
    await this.claims.claimAndRun(candidates);
  }
}
