import type { StoredRecord } from '../../store/types.js';
import type { Claims } from '../claim/claim.js';
import { abandonedEntry, FINAL_STATUSES, occurrenceHistory } from '../claim/dead-attempt.js';
import type { Candidate } from '../internal-types.js';
import { keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { type InflightRecord, sinceOf } from '../run/run-records.js';

/** Runs in flight whose node died (or gave up): run again, or recorded as abandoned. */
export class Recovery {
  constructor(
    private readonly state: NodeState,
    private readonly claims: Claims,
  ) {}

  /**
   * In-flight records of other nodes' runs too young to be dead, by key: their lease cannot end
   * before this store time. A poll reads every node's in-flight records (thousands through a
   * fan-out); these are not parsed again until then. A record under the same key written later (a
   * retry, a recovery) belongs to a claim granted later, whose lease cannot end sooner — unless the
   * job was redefined with a shorter lockAtMostFor meanwhile: that run, if it dies, is recovered
   * when the earlier bound passes instead (late, never lost).
   */
  private youngUntil = new Map<string, number>();

  /**
   * Recovery: an inflight record whose lease is free belongs to a run whose node died (or gave
   * up). With `recover` it is run again here with attempt + 1 and a higher token; without, it is
   * recorded as abandoned. An occurrence whose final history exists is only cleaned up.
   */
  async recover(records: StoredRecord[], now: number): Promise<void> {
    const s = this.state;
    const candidates: Candidate[] = [];
    const known = this.youngUntil;
    const young = new Map<string, number>();
    this.youngUntil = young;
    for (const r of records) {
      // Known young: skipped on a lookup by the key as read (most records at most polls), before
      // the occurrence key is built for the check below.
      const until = known.get(r.key);
      if (until !== undefined && until > now) {
        young.set(r.key, until);
        continue;
      }
      // Still running (or still storing its outcome) here: its lease may have lapsed during an
      // outage, but this node knows it is not dead.
      if (s.runningHere.has(keys.occurrenceOfInflight(r.key))) continue;
      const rec = JSON.parse(r.value) as InflightRecord;
      const job = s.defined.get(rec.job);
      if (!job) continue;
      // A lease cannot end before claimedAt + leaseMs (extensions only move it later): no need to
      // ask the store about a run that young. Only runs older than their lease cost a look-up.
      if (rec.claimedAt + rec.leaseMs > now) {
        young.set(r.key, rec.claimedAt + rec.leaseMs);
        continue;
      }
      const occ: OccurrenceId = {
        job: rec.job,
        scheduleId: rec.scheduleId,
        fireTime: rec.fireTime,
        shard: rec.shard,
      };
      if ((await s.store.inspect(keys.occurrence(occ))) !== null) continue;
      // Its attempt ended — or a later one did: a record whose start batch landed late, after a
      // recovery had run the next attempt and deleted the record, names an attempt recorded
      // abandoned (the occurrence's "done" hold keeps it off for an hour at least; then, read by
      // its own attempt, the next ran again after its success). One scan, as the get was.
      const final = (await occurrenceHistory(s, occ)).some(
        (e) =>
          FINAL_STATUSES.has(e.status) &&
          (e.attempt === rec.attempt || (e.attempt > rec.attempt && e.willRetry !== true)),
      );
      // The dead attempt, recorded as abandoned: now (without recover), or in the same write that
      // starts the new attempt.
      const abandoned = (error?: string) => abandonedEntry(occ, rec, now, error);
      if (final || !job.spec.recover) {
        if (!final) await s.store.put(keys.history(occ, rec.attempt), abandoned(), { ttlMs: s.retentionMs });
        await s.store.delete(r.key);
        continue;
      }
      // A recovered run takes the overlap gate like any other run, and waits (next poll) while
      // another run of the job holds it.
      candidates.push({
        occ,
        ...(rec.scheduledAt !== undefined && { scheduledAt: rec.scheduledAt }),
        source: 'recover',
        data: rec.data,
        attempt: rec.attempt + 1,
        gate: job.spec.overlap !== 'allow',
        runningSince: sinceOf(rec),
        startWrites: [
          {
            op: 'put',
            key: keys.history(occ, rec.attempt),
            value: abandoned(`node ${rec.node} stopped renewing its lease; recovered by ${s.node}`),
            ttlMs: s.retentionMs,
          },
        ],
      });
    }
    await this.claims.claimAndRun(candidates);
  }
}
