import type { StoredRecord } from '../../store/types.js';
import { accountedFor } from '../claim/on-record.js';
import { type Candidate, type Job, shardsOf } from '../internal-types.js';
import type { OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { SPREAD_GRACE_MS } from './spread.js';

/** A trigger request as `trigger()` writes it (`ctl|trig|<job>|<id>`). */
interface TriggerRequest {
  id: string;
  job: string;
  requestedAt: number;
  data?: unknown;
}

/**
 * Turns manual trigger requests into claims.
 *
 * A job without shards: one occurrence, claimed by whichever node reads the request first; the
 * request is consumed in that run's start batch (or with its skip), so it is gone exactly when the
 * run is on record, and a claim that never got that far leaves it for the next poll.
 *
 * A sharded job: its items are spread over the live nodes as a scheduled occurrence's are
 * (spread.ts, ElasticJob's average allocation: 8 items on 4 nodes, 2 each) — a node offers the
 * items it goes first for at once, the others after the grace. Several nodes then work one
 * request, so no single start batch may consume it: the request stays until every item is on
 * record (on-record.ts: an in-flight record, running or dead and left to recovery; a history record;
 * a queued run) and is then deleted as read (compare-and-delete) by a node that has offered every
 * item itself. An item found on no record then (its claimant died before its start record, or
 * its claim is still being started) is offered again: a claim that is still held is refused, one
 * whose lease lapsed is won and run. Each node offers each item once per request otherwise, so
 * a request costs a refused claim per item another node ran, and one read of its items' records
 * per poll after the grace until it is consumed.
 */
export class TriggerRequests {
  /** Per sharded request read: the items this node has offered (claimed: won, refused or given back). */
  private readonly offered = new Map<string, Set<number>>();

  constructor(private readonly state: NodeState) {}

  /** Candidates for the requests a poll read (at most `slots` of them), and consumes finished sharded ones. */
  async candidates(records: StoredRecord[], now: number, slots: number): Promise<Candidate[]> {
    const s = this.state;
    const candidates: Candidate[] = [];
    let left = slots;
    const read = new Set<string>();
    for (const r of records) {
      const req = JSON.parse(r.value) as TriggerRequest;
      const job = s.defined.get(req.job);
      if (!job) continue;
      read.add(r.key);
      const occ = (shard: number | undefined): OccurrenceId => ({
        job: req.job,
        scheduleId: `manual:${req.id}`,
        fireTime: req.requestedAt,
        shard,
      });
      const candidate = (shard: number | undefined, consumes: boolean): Candidate => ({
        occ: occ(shard),
        source: 'manual',
        data: req.data,
        attempt: 1,
        gate: job.spec.overlap !== 'allow',
        ...(consumes && { consumes: r.key }),
      });
      const count = job.spec.shards?.count;
      if (count === undefined) {
        if (left <= 0) continue;
        left--;
        candidates.push(candidate(undefined, true));
        continue;
      }
      let offered = this.offered.get(r.key);
      if (!offered) {
        offered = new Set();
        this.offered.set(r.key, offered);
      }
      const afterGrace = now >= req.requestedAt + SPREAD_GRACE_MS;
      let offeredNow = false;
      for (const shard of shardsOf(job) as number[]) {
        if (left <= 0) break;
        if (offered.has(shard)) continue;
        if (!afterGrace && s.spread.claimableAt(occ(shard), count, SPREAD_GRACE_MS) > now) continue;
        offered.add(shard);
        left--;
        offeredNow = true;
        candidates.push(candidate(shard, false));
      }
      if (afterGrace && !offeredNow && offered.size === count) await this.consumeIfDone(r, job, occ, offered);
    }
    for (const key of this.offered.keys()) if (!read.has(key)) this.offered.delete(key);
    return candidates;
  }

  /**
   * Deletes the request (as read) once every item is on record (on-record.ts); an item on no
   * record is offered again at the next poll.
   */
  private async consumeIfDone(
    r: StoredRecord,
    job: Job,
    occ: (shard: number) => OccurrenceId,
    offered: Set<number>,
  ): Promise<void> {
    const items = shardsOf(job) as number[];
    const accounted = await accountedFor(this.state, items.map(occ));
    const missing = items.filter((_, i) => !accounted[i]);
    if (missing.length === 0) {
      await this.state.store.apply([{ op: 'delete', key: r.key, ifValue: r.value }]);
      this.offered.delete(r.key);
      return;
    }
    for (const shard of missing) offered.delete(shard);
  }
}
