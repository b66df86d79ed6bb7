import type { Lease, WriteOp } from '../store/types.js';
import { doneHold, doneUntil, type HighWater } from './high-water.js';
import { encodeHistory, occFields } from './history.js';
import { type Candidate, consumeOps, type Job } from './internal-types.js';
import { gateScope, keys } from './keys.js';
import type { NodeState } from './node-state.js';
import type { InflightRecord } from './run-records.js';
import { settle } from './settle.js';

/** Appended to the owner of an overlap gate taken by a misfire replay. */
export const REPLAY_MARK = ' (replay)';

/** What happens to an occurrence this node claimed while its overlap gate was taken. */
export class Overlap {
  constructor(
    private readonly state: NodeState,
    private readonly highWater: HighWater,
  ) {}

  /**
   * The occurrence is ours but a run of the job is going elsewhere: skip it, or queue it (one
   * pending run). Each outcome is one batch, retried while the claim holds if the store fails.
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
    if ((c.source === 'misfire' && job.spec.misfire === 'catch-up') || c.source === 'recover') {
      // A catch-up replay waits for the previous one, a recovery for the run holding the gate:
      // free the occurrence and try again next tick (recovery: next poll; its in-flight record stays).
      await settle(s, what, [{ op: 'release', key: lease.key, token: lease.token }], lease, sentAt);
      return;
    }
    // What marks the occurrence handled: a due entry moved on, or the job's high-water mark.
    const mark = this.highWater.highWaterOp(c.occ);
    const advance = c.advance ?? (mark ? [mark] : []);
    // After an outage or a pause, nodes see "missed" at different moments: one may still be
    // replaying the latest missed fire time when another claims the next one on time. Skipping
    // that one for "overlapping" catch-up work would lose a fire time nobody missed, so it
    // queues behind the replay instead (one look-up, only when the gate is taken).
    const behindReplay =
      c.source === 'schedule' &&
      job.spec.overlap === 'skip' &&
      (await s.store.inspect(keys.runGate(c.occ.job, gateScope(c.occ), c.occ.shard)))?.owner.endsWith(
        REPLAY_MARK,
      ) === true;
    // Queued: with overlap 'queue', and always for a run-once misfire replay ("run once more
    // after the current run ends", as ElasticJob's misfire flag): one pending run per gate (the
    // latest queued), claimed by whichever node sees the gate free first. One batch: the pending
    // record, the occurrence freed for it, the mark, and the trigger request it replaces. The
    // record is the fire time's own (keys.pending): a second fire time queued behind the same run
    // writes a second record, and the reader runs the latest and records the older skipped
    // (Overlap.superseded).
    // A candidate that came from the pending record leaves the record as it is, still queued:
    // putting back what it read (the same occurrence, data and source) could clobber what another
    // node wrote since — a newer fire time queued behind the gate's run, whose occurrence was
    // released and mark raised when it queued, so the record was its only trace.
    if (job.spec.overlap === 'queue' || c.source === 'misfire' || behindReplay) {
      await settle(
        s,
        what,
        [
          ...(c.fromPending
            ? []
            : [
                {
                  op: 'put' as const,
                  key: keys.pending(c.occ.job, gateScope(c.occ), c.occ.shard, c.occ.fireTime),
                  value: JSON.stringify({ ...c.occ, data: c.data, source: c.source }),
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
      return;
    }
    // A fire time that started elsewhere and whose run died (its in-flight record is there, its
    // lease lapsed — this claim won it): a node whose cursor lagged claims it afresh. Recording it
    // skipped would close it with a final history after a run that never finished, and recovery
    // would then only clean up (simulator seeds 1124, 2110 of 3,000). Freed instead, for recovery
    // (recover.ts) to re-run it or record it abandoned. `deadRun` is the in-flight record as read
    // for a claim won a whole lease after the fire time (claim.ts, lateLook): an on-time skip
    // reads nothing.
    if (deadRun !== undefined) {
      await settle(s, what, [{ op: 'release', key: lease.key, token: lease.token }], lease, sentAt);
      return;
    }
    await this.skip(job, c, lease, sentAt, advance);
  }

  /**
   * A queued run with a later one queued behind the same gate (requests.ts): the gate keeps one
   * pending run, the latest, so this one is recorded skipped for overlap — on record, never
   * silently dropped. The mark was raised when it was queued.
   */
  async superseded(job: Job, c: Candidate, lease: Lease, sentAt: number): Promise<void> {
    await this.skip(job, c, lease, sentAt, []);
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
      () => s.emit('skipped', { ...occFields(c.occ), reason: 'overlap' }),
      () => s.lapsedClaim(c, sentAt),
    );
  }
}
