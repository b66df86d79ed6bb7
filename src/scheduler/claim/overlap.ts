import type { Lease, WriteOp } from '../../store/types.js';
import { encodeHistory, occFields } from '../finish/history.js';
import { settle } from '../finish/settle.js';
import { type Candidate, consumeOps, type Job, type Source, sourceKey } from '../internal-types.js';
import { gateOf, gateScope, keys } from '../keys.js';
import type { NodeState } from '../node-state.js';
import type { InflightRecord } from '../run/run-records.js';
import type { SkipCause } from '../types.js';
import { inflightOf, occurrenceEnded } from './dead-attempt.js';
import { doneHold, doneUntil, type HighWater } from './high-water.js';
import { overlappingRun } from './overlapping-run.js';
import type { PendingValue } from './pending-record.js';

/** A pending record's value: a fire time queued (or waiting, `wait`) behind its overlap gate. */
/** How many of a gate's pending records an on-time claim reads to find an older waiting one (Overlap.behindOlder). */
const MAX_PENDING_LOOK = 16;

/** Appended to the owner of an overlap gate taken by a misfire replay. */
export const REPLAY_MARK = ' (replay)';

/** What happens to an occurrence this node claimed while its overlap gate was taken. */
export class Overlap {
  constructor(
    private readonly state: NodeState,
    private readonly highWater: HighWater,
  ) {}

  /**
   * The occurrence is ours but its overlap gate is taken: skip it, queue it (one pending run per
   * gate), or make it wait behind the gate. Each outcome is one batch, retried while the claim
   * holds if the store fails.
   *
   * Skipped (overlap 'skip') only when a run of the gate had *started* at or before this fire time
   * and is still going (overlapping-run.ts), and the skip names that run. A gate held by a claim
   * that has not started — its reply lost, its node frozen, its start record on the way — or by a
   * run that started after this fire time overlapped nothing at the fire time: this fire time
   * waits behind the gate (a pending record marked `wait`, never superseded, never skipped unless
   * a run that started before it is found going when it is looked at again) and runs once the
   * holder ends, or once the holder's lease lapses unstarted. Likewise under 'queue': queued (the
   * buffered one, which a later queued fire time supersedes) only behind a run that started
   * before it; otherwise it waits. Under 'queue-all' it is queued either way, and never
   * superseded: every queued fire time runs, oldest first (requests.ts).
   */
  async overlapped(
    job: Job,
    c: Candidate,
    lease: Lease,
    sentAt: number,
    deadRun: InflightRecord | undefined,
  ): Promise<void> {
    const s = this.state;
    const what = `overlap handling of ${c.occ.job}`;
    const release = () =>
      settle(s, what, [{ op: 'release', key: lease.key, token: lease.token }], lease, sentAt);
    if (
      (c.source === 'misfire' && job.spec.misfire === 'catch-up') ||
      (c.source === 'recover' && !c.unstarted) ||
      c.source === 'backfill'
    ) {
      // A catch-up replay waits for the previous one, a recovery for the run holding the gate, a
      // backfill for the run before it (or any run of its gate): free the occurrence and try again
      // next tick (recovery, backfill: next poll; its in-flight, pending or backfill request stays).
      await release();
      // The replay of a job's own trigger is offered again by this node, whatever the high-water
      // mark says meanwhile (replayAgain). Other nodes saw it held and went past it: one of them
      // replaying the next fire time raised the mark past it, and the one that watched it
      // crashed — a lost fire time (simulator: three jobs, pauses, catch-up, seeds 16, 21, 27 of
      // 30). A due entry's replay needs nothing: the entry stays where it is until that run starts.
      if (c.source === 'misfire' && c.entryReadAt === undefined && c.fromPending !== true) {
        const source = s.sources.get(sourceKey(c.occ.job, c.occ.scheduleId));
        if (source) replayAgain(source, c);
      }
      return;
    }
    // Won from a stale read of the due index: given back before this (claim.ts, entry-moved.ts).
    // What marks the occurrence handled: a due entry moved on, or the job's high-water mark.
    const mark = this.highWater.highWaterOp(c.occ);
    const advance = c.advance ?? (mark ? [mark] : []);
    // After an outage or a pause, nodes see "missed" at different moments: one may still be
    // replaying the latest missed fire time when another claims the next one on time. Skipping
    // that one for "overlapping" catch-up work would lose a fire time nobody missed, so it
    // waits behind the replay instead (one look-up, only when the gate is taken).
    const behindReplay =
      c.source === 'schedule' &&
      job.spec.overlap === 'skip' &&
      (await s.store.inspect(gateOf(c.occ)))?.owner.endsWith(REPLAY_MARK) === true;
    // A run-once misfire replay is always queued ("run once more after the current run ends", as
    // ElasticJob's misfire flag); a fire time claimed behind a replay, and a recovery of a claim
    // that never started, wait.
    if (c.source === 'misfire' || behindReplay || c.unstarted) {
      // A replay of a fire time another node already queued waiting behind the gate (this node's
      // cursor lagged; the queue freed the occurrence) keeps it waiting: rewritten as a replay it
      // became the gate's buffered run, and the next queued fire time superseded it though no run
      // had overlapped it (simulator, seed 100 of test/simulate-waiting-backlog.test.ts).
      const wait = c.source !== 'misfire' || (!c.fromPending && (await this.waitingAlready(c)));
      await this.queue(job, c, lease, sentAt, advance, wait);
      return;
    }
    // A fire time that started elsewhere and whose run died (its in-flight record is there, its
    // lease lapsed — this claim won it): a node whose cursor lagged claims it afresh. Recording it
    // skipped would close it with a final history after a run that never finished, and recovery
    // would then only clean up (simulator seeds 1124, 2110 of 3,000). Freed instead, for recovery
    // (recover.ts) to re-run it or record it abandoned. `deadRun` is the in-flight record as read
    // for a claim won a whole lease after the fire time (claim.ts, lateLook): an on-time skip
    // reads nothing.
    // 'replace' queues like 'queue': its pending record is what aborts the running run (run/replace.ts).
    const queues = job.spec.overlap !== 'skip' && job.spec.overlap !== 'allow';
    if (deadRun !== undefined && !queues) {
      await release();
      return;
    }
    // Queued behind a run, its record is enough; skipped, it names a run whose handler was called
    // by then (run/invoked-mark.ts).
    const by = await overlappingRun(s, job, c.occ, !queues);
    if (queues || !by) {
      // Queued behind a run that started before it (the gate's buffered run), or waiting behind a
      // claim that has not started (or a run that started after it); a waiting record stays one.
      await this.queue(job, c, lease, sentAt, advance, !by || c.waiting === true);
      return;
    }
    // Not run: a stored schedule with maxRuns moves on without counting it (control/runs-left.ts).
    await this.skip(job, c, lease, sentAt, c.advanceIfUnrun ?? advance, 'overlap', by);
  }

  /**
   * An on-time claim never overtakes an older fire time of its gate that is still to run
   * (`true`: handled here, queued or skipped). The gate frees between a run's end and the claim
   * of what waits behind it (a poll's, or the re-read at the run's end: the occurrence, then the
   * gate, two round trips), and an on-time claim, which asked for both at once, won that moment
   * nearly every time: under a job busy most of the time, fire times waiting behind a claim that
   * had not started (`wait`, see overlapped) waited to the end (simulator, 3 nodes, 1 s jobs with
   * runs of 50-1500 ms, lost replies and stalls: seeds 89 and 100, skip@+13 s and +14 s never
   * ran; test/simulate-waiting-backlog.test.ts). Two cases:
   * - Any overlap policy: a fire time waiting at the gate, older than this one, as the last poll
   *   read them (yieldsGate: no store call), confirmed by one scan of the gate's pending records
   *   (it may have run since that poll). Such a claim did not ask for the gate (`gate`
   *   undefined) and is handled as if refused it (overlapped): skipped, or queued behind, a run
   *   that started before its fire time and is going; otherwise it waits (it overlapped no run).
   *   (A first version made it wait without that look: fire times that a started run overlapped
   *   waited too, and only lengthened the line.) One that won the gate (the poll had not seen
   *   the waiting one) waits too and gives the gate back.
   * - 'queue-all': any older queued fire time of the gate (one scan for every on-time claim of a
   *   'queue-all' job): queued behind it, in order.
   */
  async behindOlder(
    job: Job,
    c: Candidate,
    lease: Lease,
    gate: Lease | undefined,
    sentAt: number,
    deadRun: InflightRecord | undefined,
  ): Promise<boolean> {
    if (c.source !== 'schedule' || c.fromPending) return false;
    const all = job.spec.overlap === 'queue-all';
    if (!all && !this.yieldsGate(c)) return false;
    const gateKey = keys.pendingOfGate(c.occ.job, gateScope(c.occ), c.occ.shard);
    // Oldest first (keys.pending sorts by fire time); a gate keeps few records (one per fire
    // time queued behind it).
    const older = (await this.state.store.scan(`${gateKey}|`, { limit: all ? 1 : MAX_PENDING_LOOK }))
      .map((r) => JSON.parse(r.value) as PendingValue)
      .some((p) => p.fireTime < c.occ.fireTime && (all || p.wait === true));
    if (!older) return false;
    if (!gate) {
      await this.overlapped(job, c, lease, sentAt, deadRun);
      return true;
    }
    const mark = this.highWater.highWaterOp(c.occ);
    const advance = c.advance ?? (mark ? [mark] : []);
    await this.queue(
      job,
      c,
      lease,
      sentAt,
      [...advance, { op: 'release', key: gate.key, token: gate.token }],
      !all,
    );
    return true;
  }

  /**
   * Whether an on-time claim of a gated candidate comes after a fire time waiting at its gate, as
   * the last poll read them (NodeState.waitingGates): it then asks for the gate only once it has
   * won its occurrence and found (behindOlder) that the waiting one ran meanwhile. Asked for with
   * the occurrence, the gate was taken for a moment by each such claim that then gave it back,
   * and the waiting one's own claim, refused in that moment, waited for the next poll.
   */
  yieldsGate(c: Candidate): boolean {
    // (Most polls find no fire time waiting: then no gate key is built for an on-time claim.)
    const waiting = this.state.waitingGates;
    if (waiting.size === 0 || c.source !== 'schedule' || c.fromPending) return false;
    const since = waiting.get(gateOf(c.occ));
    return since !== undefined && since < c.occ.fireTime;
  }

  /** Whether the occurrence's own pending record is there, marked waiting (one get). */
  private async waitingAlready(c: Candidate): Promise<boolean> {
    const value = await this.state.store.get(
      keys.pending(c.occ.job, gateScope(c.occ), c.occ.shard, c.occ.fireTime),
    );
    return value !== null && (JSON.parse(value) as PendingValue).wait === true;
  }

  /**
   * 'queue-all' offers only a gate's oldest queued fire time, and every overlap policy only a
   * gate's oldest waiting one (requests.ts), so a stale one — its fire time ran or was settled
   * some other way (a node that lagged claimed it through its own cursor, a misfire settle of
   * its due entry read before it was moved, or two nodes queued it and the run consumed the
   * record only as one of them wrote it), its occurrence held "done" — would block the gate's
   * queue for the whole done hold; and since a later on-time claim yields to a waiting one
   * (behindOlder), every later fire time of the gate with it: the schedule stopped (simulator,
   * seed 186 of the lost-replies queue mix: a waiting record of +4 s whose occurrence a misfire
   * settle held "done", no history entry, and nothing of that stored schedule ran from +15 s on).
   * A refused claim of such a pending record looks (only then): its fire time ended on record,
   * or its occurrence held by a "done" hold (one that lasts longer than any lease from now) —
   * the record is deleted as read and `true` returned; the next poll offers the next one.
   */
  async droppedStale(job: Job, c: Candidate): Promise<boolean> {
    if (!c.fromPending || (job.spec.overlap !== 'queue-all' && c.waiting !== true)) return false;
    const s = this.state;
    const held = await s.store.inspect(keys.occurrence(c.occ));
    // A lease ends at most lockAtMostFor after its holder's last renewal; a "done" hold lasts a
    // done hold (an hour or more) after its settle. One that outlasts any lease from now is done.
    const leaseBound = job.spec.lockAtMostForMs + 2 * s.storeClock.errorBound() + 1_000;
    const done = held !== null && held.expiresAt - s.storeClock.estimate() > leaseBound;
    if (!done && !(await occurrenceEnded(s, c.occ))) return false;
    await s.store.apply(consumeOps(c));
    return true;
  }

  /**
   * One batch: the pending record (`wait`: never superseded, see requests.ts), the occurrence
   * freed for it, the mark, and the trigger request it replaces. The record is the fire time's own
   * (keys.pending): a second fire time queued behind the same run writes a second record, and the
   * reader runs the latest and records the older (not waiting) ones skipped (Overlap.superseded).
   * A candidate that came from the pending record leaves the record as it is, still queued:
   * putting back what it read (the same occurrence, data and source) could clobber what another
   * node wrote since — a newer fire time queued behind the gate's run, whose occurrence was
   * released and mark raised when it queued, so the record was its only trace.
   */
  private async queue(
    job: Job,
    c: Candidate,
    lease: Lease,
    sentAt: number,
    advance: WriteOp[],
    wait: boolean,
  ): Promise<void> {
    const s = this.state;
    const value: PendingValue = {
      ...c.occ,
      data: c.data,
      source: c.source,
      ...(c.scheduledAt !== undefined && c.scheduledAt !== c.occ.fireTime && { at: c.scheduledAt }),
      ...(wait && { wait: true as const }),
    };
    await settle(
      s,
      `overlap handling of ${job.spec.name}`,
      [
        ...(c.fromPending
          ? []
          : [
              {
                op: 'put' as const,
                key: keys.pending(c.occ.job, gateScope(c.occ), c.occ.shard, c.occ.fireTime),
                value: JSON.stringify(value),
              },
              ...consumeOps(c),
            ]),
        { op: 'release', key: lease.key, token: lease.token },
        ...advance,
      ],
      lease,
      sentAt,
      undefined,
      () => s.lapsedClaim(c, sentAt),
    );
  }

  /**
   * A queued run with a later one queued behind the same gate (requests.ts): the gate keeps one
   * pending run, the latest, so this one is recorded skipped for overlap — on record, never
   * silently dropped. The mark was raised when it was queued. Unless a run of it started
   * meanwhile (another node dequeued it) and died — its lease lost, its node stopped, the
   * occurrence freed at once: `deadRun` as the claim read it, else read now. That run is never
   * superseded: `false`, and the claim frees the occurrence (and its gate) for recovery
   * (recover.ts, which runs it under its gate). Before, it was recorded superseded after it had
   * started (simulator, lost replies: the run of +11 s started, then "superseded by +13 s").
   */
  async superseded(
    job: Job,
    c: Candidate,
    lease: Lease,
    sentAt: number,
    deadRun: InflightRecord | undefined,
  ): Promise<boolean> {
    if (deadRun ?? (await inflightOf(this.state, c.occ))) return false;
    await this.skip(job, c, lease, sentAt, [], 'superseded', { fireTime: new Date(c.supersededBy!) });
    return true;
  }

  /**
   * A fire time its trigger's `exclude` list matches (Candidate.excluded), won: recorded skipped
   * with reason `excluded` in the one batch an overlap skip writes (its history entry, the mark or
   * the due entry's move, the "done" hold) — no store call beyond the claim's own. Recorded by the
   * winner of its claim only, so once fleet-wide.
   */
  async excluded(job: Job, c: Candidate, lease: Lease, sentAt: number): Promise<void> {
    const mark = this.highWater.highWaterOp(c.occ);
    const advance = c.advanceIfUnrun ?? c.advance ?? (mark ? [mark] : []);
    await this.skip(job, c, lease, sentAt, advance, 'excluded', undefined);
  }

  /**
   * Skipped: recorded, marked, kept claimed ("done"), and a skipped trigger request or pending run
   * is consumed (or every poll would re-read it; a pending record only as read) — one batch.
   */
  private async skip(
    job: Job,
    c: Candidate,
    lease: Lease,
    sentAt: number,
    advance: WriteOp[],
    reason: 'overlap' | 'superseded' | 'excluded',
    by: SkipCause | undefined,
  ): Promise<void> {
    const s = this.state;
    const what = `overlap handling of ${c.occ.job}`;
    const at = new Date(lease.acquiredAt);
    await settle(
      s,
      what,
      [
        {
          op: 'put',
          key: keys.history(c.occ, 1),
          value: encodeHistory({
            ...occFields(c.occ),
            node: s.node,
            attempt: 1,
            token: lease.token,
            source: c.source,
            status: 'skipped',
            startedAt: at,
            finishedAt: at,
            reason,
            ...(by !== undefined && { by }),
          }),
          ttlMs: s.retentionMs,
        },
        ...advance,
        {
          op: 'release',
          key: lease.key,
          token: lease.token,
          holdUntil: doneUntil(c.occ.fireTime, lease, sentAt, s.clock.monotonic(), doneHold(job)),
        },
        ...consumeOps(c),
      ],
      lease,
      sentAt,
      () => s.emit('skipped', { ...occFields(c.occ), reason, ...(by !== undefined && { by }) }),
      () => s.lapsedClaim(c, sentAt),
    );
  }
}

/**
 * A catch-up replay of the job's own trigger that this node won and gave back, its overlap gate
 * held: queued on its source to be offered again at the next ticks, ahead of anything on time (as
 * a replay the misfire scan returns is), until a claim of it is decided — run, or refused because
 * someone else holds it (then watched, watch.ts). The cursor stays before it, but that alone does
 * not bring it back: the scan starts at the high-water mark, which a node that saw the fire time
 * held while this one had it raised past it by replaying the next one.
 */
function replayAgain(source: Source, c: Candidate): void {
  const fireTime = c.occ.fireTime;
  const queued = source.queue.find((q) => q.fireTime === fireTime);
  if (queued) {
    if (!queued.shards.includes(c.occ.shard)) queued.shards.push(c.occ.shard);
    return;
  }
  source.queue.push({
    fireTime,
    ...(c.scheduledAt !== undefined && { at: c.scheduledAt }),
    source: 'misfire',
    shards: [c.occ.shard],
    graceMs: 0,
  });
  source.queue.sort((a, b) => a.fireTime - b.fireTime);
}
