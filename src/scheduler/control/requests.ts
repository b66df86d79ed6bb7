import type { StoredRecord } from '../../store/types.js';
import type { Claims } from '../claim/claim.js';
import type { PendingValue } from '../claim/pending-record.js';
import type { Candidate } from '../internal-types.js';
import { gateOf, jobOfKey, keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { replaceOlder } from '../run/replace.js';
import type { InflightRecord } from '../run/run-records.js';
import { backfillCandidates } from './backfill-requests.js';
import { TriggerRequests } from './trigger-requests.js';

/** Turns what a poll read — trigger requests, queued runs and backfill requests — into claims. */
export class Requests {
  private readonly triggers: TriggerRequests;

  constructor(
    private readonly state: NodeState,
    private readonly claims: Claims,
  ) {
    this.triggers = new TriggerRequests(state);
  }

  /**
   * Manual trigger requests and queued (overlap 'queue') runs of jobs this node defines;
   * `inflight`: the in-flight records the same poll read (a queued run may find one of a dead run
   * of its own fire time, see Candidate.deadRun; a gate with a dead run waits for its recovery);
   * `now`: the poll's estimate of the store clock; `backfill`: the backfill requests it read.
   */
  async claimRequests(
    requests: StoredRecord[],
    queued: StoredRecord[],
    inflight: StoredRecord[],
    now: number,
    backfill: StoredRecord[] = [],
  ): Promise<void> {
    const s = this.state;
    // Manual trigger requests first (trigger-requests.ts), then queued runs, then backfill
    // requests (backfill-requests.ts: past fire times, after what is due now).
    const manual = await this.triggers.candidates(requests, now, s.freeSlots());
    const queuedRuns = this.queuedRuns(queued, inflight, now);
    // (No request stored: none is remembered as read either — a later request of the same key
    // is read for the first time, see backfillCandidates.)
    if (backfill.length === 0 && s.backfillSeen.size > 0) s.backfillSeen.clear();
    const past =
      backfill.length === 0
        ? []
        : backfillCandidates(s, backfill, s.freeSlots() - manual.length - queuedRuns.length);
    await this.claims.claimAndRun([...manual, ...queuedRuns, ...past]);
  }

  /** Candidates for the queued runs a poll read (see claimRequests). */
  private queuedRuns(queued: StoredRecord[], inflight: StoredRecord[], now: number): Candidate[] {
    const s = this.state;
    const out: Candidate[] = [];
    // Queued runs, one pending record per fire time (keys.pending). A gate keeps one: its latest
    // fire time is offered to run (it waits while the gate is held); older ones — older than the
    // latest queued, or than a run of the gate in flight — are offered to be recorded skipped
    // (superseded) — each still claimed first, so a fire time that some node runs
    // or settles meanwhile is never both run and skipped. An older one whose occurrence has an
    // in-flight record (it started elsewhere, maybe died) is offered as a run instead: its claim
    // recovers or settles it (claim.ts), never skips it.
    const latest = new Map<string, number>();
    const queuedRuns: {
      r: StoredRecord;
      occ: OccurrenceId;
      p: PendingValue;
      gate: string;
      buffered: boolean;
      all: boolean;
    }[] = [];
    // Overlap 'queue-all': the oldest queued fire time of each gate (the only one offered).
    const oldest = new Map<string, number>();
    for (const r of queued) {
      const job = s.defined.get(jobOfKey(r.key));
      if (!job || s.paused.has(job.spec.name)) continue;
      const p = JSON.parse(r.value) as PendingValue;
      const occ: OccurrenceId = {
        job: p.job,
        scheduleId: p.scheduleId ?? undefined,
        fireTime: p.fireTime,
        shard: p.shard ?? undefined,
      };
      const gate = gateOf(occ);
      latest.set(gate, Math.max(latest.get(gate) ?? Number.NEGATIVE_INFINITY, occ.fireTime));
      const all = job.spec.overlap === 'queue-all';
      if (all) oldest.set(gate, Math.min(oldest.get(gate) ?? Number.POSITIVE_INFINITY, occ.fireTime));
      // Overlap 'replace': a queued fire time aborts this node's older runs of its gate (run/replace.ts).
      const replace = job.spec.overlap === 'replace';
      if (replace) replaceOlder(s.replaceable, gate, occ.job, occ.fireTime);
      queuedRuns.push({ r, occ, p, gate, buffered: job.spec.overlap === 'queue' || all || replace, all });
    }
    if (queuedRuns.length === 0) {
      s.waitingGates = new Map();
      return [];
    }
    // The in-flight records, read once (only when something is queued: a poll may read many).
    const runs = new Map(inflight.map((r) => [r.key, JSON.parse(r.value) as InflightRecord]));
    // Gates with a run in flight that looks dead (its lease could have ended, and it is not running
    // here): its recovery (recover.ts, later in this poll) takes the gate before the gate's queued
    // runs. Offered first, a queued run would take the gate again each time it frees (a run that
    // ends re-reads the queue at once) and, under a steady queue, the dead run would wait forever
    // (simulator, overlap 'queue' with runs longer than the interval). A live run holds the gate
    // anyway, so holding its queue back costs nothing.
    const recovering = new Set<string>();
    const going = new Set<string>();
    for (const [key, rec] of runs) {
      const gate = gateOf(rec as OccurrenceId);
      going.add(gate);
      // `latest` also counts the fire times in flight: a queued run older than a run that already
      // started was overtaken (an on-time claim of the next fire time took the gate the moment it
      // freed, before the queued run's claim did) — recorded skipped like an older queued one,
      // never run after the newer one, nor left queued behind it with no trace (etcd, scheduler
      // suite: 1.3 s runs every 1 s, a fire time neither run nor recorded when the nodes stopped).
      latest.set(gate, Math.max(latest.get(gate) ?? Number.NEGATIVE_INFINITY, rec.fireTime));
      if (rec.claimedAt + rec.leaseMs > now || s.runningHere.has(keys.occurrenceOfInflight(key))) continue;
      recovering.add(gate);
    }
    // A waiting record (overlap.ts: no run of its gate had started by its fire time) is not
    // superseded: it overlapped nothing, and runs once the gate frees. Under overlap 'queue' it
    // waits only until a run of its gate has started (the claim it waited for, or any other):
    // from then on it is that run's buffered successor like any queued one — the latest runs, the
    // older are superseded — or an overloaded job's waiting records would pile up, each claimed
    // at every poll, and the oldest never win the gate (simulator, seed 4).
    // Under overlap 'queue-all' nothing is superseded: the gate's queued fire times run one after
    // another, oldest first — only the oldest is offered (a later one offered beside it could win
    // the gate first), except a queued run whose own run died (its claim is that recovery).
    // Waiting records run oldest first too: offered all at once, each gate-free moment went to
    // whichever claim won it, and under a steady backlog one could wait to the end (simulator:
    // a 1 s job, runs of 200-950 ms, pauses, the fault mix; test/simulate-replay-watch.test.ts,
    // seed 352: +9 s waited 18 s, and +11, +12 and +15 s never ran while later ones did).
    const isWaiting = (p: PendingValue, gate: string, buffered: boolean) =>
      p.wait === true && !(buffered && going.has(gate));
    const oldestWaiting = new Map<string, number>();
    for (const { occ, p, gate, buffered } of queuedRuns)
      if (isWaiting(p, gate, buffered))
        oldestWaiting.set(gate, Math.min(oldestWaiting.get(gate) ?? Number.POSITIVE_INFINITY, occ.fireTime));
    s.waitingGates = oldestWaiting;
    for (const { r, occ, p, gate, buffered, all } of queuedRuns) {
      const run = runs.get(keys.inflight(occ));
      if (all && run === undefined && occ.fireTime > oldest.get(gate)!) continue;
      const waiting = isWaiting(p, gate, buffered);
      if (waiting && run === undefined && occ.fireTime > oldestWaiting.get(gate)!) continue;
      const superseded = !all && !waiting && occ.fireTime < latest.get(gate)! && run === undefined;
      // Its own dead run is the one exception: this claim is that run's recovery (dead-attempt.ts).
      if (!superseded && run === undefined && recovering.has(gate)) continue;
      out.push({
        occ,
        ...(p.at !== undefined && { scheduledAt: p.at }),
        source: p.source,
        // Only the recovery of a claim never started queues as `recover` (overlap.ts): read back,
        // it is that still, so its claim looks whether a run of it started meanwhile (late-look.ts)
        // — else it ran attempt 1 again after another node's attempt 1 (sweep `jit,jall,sh,shs,pq`
        // busy, seed 101: n2 took the record, started and lost its lease; n1, from the same record
        // read earlier, ran `sh@+4 s#2` as attempt 1 with a higher token).
        ...(p.source === 'recover' && { unstarted: true as const }),
        data: p.data,
        attempt: 1,
        gate: !superseded,
        consumes: r.key,
        consumesValue: r.value,
        fromPending: true,
        ...(waiting && { waiting: true as const }),
        ...(superseded && { superseded: true as const, supersededBy: latest.get(gate)! }),
        ...(run !== undefined && { deadRun: run }),
      });
    }
    return out;
  }
}
