import type { StoredRecord } from '../store/types.js';
import type { Claims } from './claim.js';
import { type Candidate, shardsOf } from './internal-types.js';
import { jobOfKey, keys, type OccurrenceId } from './keys.js';
import type { NodeState } from './node-state.js';
import type { InflightRecord } from './run-records.js';
import type { RunSource } from './types.js';

/** Turns what a poll read — trigger requests and queued runs — into claims. */
export class Requests {
  /**
   * Per trigger request of a sharded job whose shards did not all fit in the free slots: the next
   * shard to offer. The rest are offered at the next polls; the request is consumed by a claim
   * of the last group, and offering starts over if it is still there after that (a claim given up).
   */
  private readonly nextShard = new Map<string, number>();

  constructor(
    private readonly state: NodeState,
    private readonly claims: Claims,
  ) {}

  /**
   * Manual trigger requests and queued (overlap 'queue') runs of jobs this node defines;
   * `inflight`: the in-flight records the same poll read (a queued run may find one of a dead run
   * of its own fire time, see Candidate.deadRun).
   */
  async claimRequests(
    requests: StoredRecord[],
    queued: StoredRecord[],
    inflight: StoredRecord[],
  ): Promise<void> {
    const s = this.state;
    const candidates: Candidate[] = [];
    let left = s.freeSlots();
    const read = new Set<string>();
    for (const r of requests) {
      const req = JSON.parse(r.value) as { id: string; job: string; requestedAt: number; data?: unknown };
      const job = s.defined.get(req.job);
      if (!job) continue;
      read.add(r.key);
      const shards = shardsOf(job);
      const from = this.nextShard.get(r.key) ?? 0;
      const to = Math.min(shards.length, from + Math.max(0, left));
      if (to === from) continue;
      left -= to - from;
      const last = to === shards.length;
      if (last) this.nextShard.delete(r.key);
      else this.nextShard.set(r.key, to);
      for (const shard of shards.slice(from, to)) {
        candidates.push({
          occ: { job: req.job, scheduleId: `manual:${req.id}`, fireTime: req.requestedAt, shard },
          source: 'manual',
          data: req.data,
          attempt: 1,
          gate: job.spec.overlap !== 'allow',
          ...(last && { consumes: r.key }),
        });
      }
    }
    for (const key of this.nextShard.keys()) if (!read.has(key)) this.nextShard.delete(key);
    // One pending record per gate (job, stored schedule, shard).
    const runs = new Map(inflight.map((r) => [r.key, r.value]));
    for (const r of queued) {
      const job = s.defined.get(jobOfKey(r.key));
      if (!job || s.paused.has(job.spec.name)) continue;
      const p = JSON.parse(r.value) as OccurrenceId & { data?: unknown; source: RunSource };
      const occ: OccurrenceId = {
        job: p.job,
        scheduleId: p.scheduleId ?? undefined,
        fireTime: p.fireTime,
        shard: p.shard ?? undefined,
      };
      const run = runs.get(keys.inflight(occ));
      candidates.push({
        occ,
        source: p.source,
        data: p.data,
        attempt: 1,
        gate: true,
        consumes: r.key,
        consumesValue: r.value,
        fromPending: true,
        ...(run !== undefined && { deadRun: JSON.parse(run) as InflightRecord }),
      });
    }
    await this.claims.claimAndRun(candidates);
  }
}
