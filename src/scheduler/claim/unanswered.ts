import type { Lease } from '../../store/types.js';
import { type Candidate, gateAfterWin, type Job, movesEntry, rewind, sourceKey } from '../internal-types.js';
import type { JobSpec } from '../job-options.js';
import { gateOf, keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import type { InflightRecord } from '../run/run-records.js';
import { FINAL_STATUSES, occurrenceHistory } from './dead-attempt.js';
import { gateOwner } from './gate-owner.js';
import { accountedFor } from './on-record.js';
import { REPLAY_MARK } from './overlap.js';

/** Claims whose acquire got no answer that are remembered at most (the oldest are dropped first). */
const MAX_UNANSWERED = 10_000;
/** Stored schedules' shard items waiting to be recovered here at most (NodeState.dueRecoveries). */
const MAX_DUE_RECOVERIES = 10_000;

/** A claim whose acquire failed without an answer (see {@link Unanswered}). */
interface Pending {
  c: Candidate;
  /** Local monotonic time just before the acquire was sent (lease maths, as for any grant). */
  sentAt: number;
  /** The fleet permit it keeps until resolved or its lease has surely run out (run/fleet-limits.ts, `keep`). */
  permit?: Kept;
}

/** A limited job's fleet permit kept by an unanswered claim, and until when (local monotonic time). */
export interface Kept {
  spec: JobSpec;
  until: number;
}

/** What became of an unanswered claim, once the store answers again. */
export type Resolution =
  | {
      kind: 'ours';
      c: Candidate;
      lease: Lease;
      gate: Lease | null | undefined;
      sentAt: number;
      /** The fleet permit it kept while unanswered, given back once it is adopted. */
      permit?: Kept;
    }
  | { kind: 'settled' };

/**
 * Claims whose acquire failed without an answer: a timeout, a reset connection, a reply lost after
 * the store committed. The store may have granted them — and every other node was then refused —
 * so forgetting them would lose those fire times: nobody would run them, and the lease would just
 * expire (the cursor of a job trigger is already past them).
 *
 * So they are kept, and before the next claims the node asks the store (one `inspect` each; they
 * are rare): an occurrence held by this node under a lease it is not running is the lost grant —
 * it is adopted and started as if the answer had come (its gate too when the same acquire granted
 * it: same owner, same grant time; otherwise the gate is asked for now). An occurrence held by
 * another node is theirs. One that nobody holds was never granted, or its lease ran out: it is
 * offered again — a job trigger's cursor is moved back before it (the misfire policy then judges
 * how late it is), a due entry is read again (it moves on only when a run starts), and trigger
 * requests, pending runs and recoveries are re-read from the store anyway.
 *
 * Races: a node id is unique per scheduler, so "held by this node" means granted to this node —
 * but not necessarily by the unanswered acquire: a node may offer one occurrence twice (its queued
 * run and its own cursor in the same poll, say), win the first, run it, and lose the reply of the
 * second, which the store refused. The lease it then finds is the first grant's, kept "done" after
 * its run: adopting it ran the occurrence a second time under the same token (simulator seed 2915
 * of 3,000). So a grant whose token is already on record for the occurrence is not adopted
 * ({@link grantUsed}). A lease adopted after it expired is refused by the store when the run
 * records its start (the start batch holds the lease), exactly as a slow grant would be.
 */
export class Unanswered {
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly state: NodeState) {}

  /** The claims of an acquire that failed: remembered until the store answers again. */
  add(batch: readonly Candidate[], sentAt: number): void {
    const s = this.state;
    for (const c of batch) {
      const key = keys.occurrence(c.occ);
      const was = this.pending.get(key);
      this.pending.delete(key);
      // A limited job's claim keeps a fleet permit until the store says what became of it: it
      // may start then, with no reservation of its own.
      let permit = was?.permit;
      const spec = s.defined.get(c.occ.job)?.spec;
      // Its lease runs out by then, granted or not (as for any grant: from before the send); a
      // claim sent again (its answer lost again) keeps its permit until the later lease ends.
      const until = spec && sentAt + spec.lockAtMostForMs;
      if (permit && until !== undefined && until > permit.until) {
        s.limits.unkeep(permit.spec, permit.until);
        permit = undefined;
      }
      if (permit === undefined && spec && until !== undefined && s.limits.limited(spec)) {
        permit = { spec, until };
        s.limits.keep(spec, until);
      }
      this.pending.set(key, { c, sentAt, ...(permit && { permit }) });
    }
    for (const [key, p] of this.pending) {
      if (this.pending.size <= MAX_UNANSWERED) break;
      this.pending.delete(key);
      if (p.permit) s.limits.unkeep(p.permit.spec, p.permit.until);
    }
  }

  get size(): number {
    return this.pending.size;
  }

  /**
   * Asks the store about every remembered claim ({@link resolve}) and hands each grant that is
   * this node's to `adopt` — each on its own: one whose handling fails is remembered again by
   * `adopt` (claim.ts, afterClaim), and the others are started all the same. Then throws the
   * first failure, if any.
   */
  async adoptAll(adopt: (r: Extract<Resolution, { kind: 'ours' }>) => Promise<unknown>): Promise<void> {
    const resolved = await this.resolve();
    let failure = resolved.failure;
    for (const r of resolved.ours) {
      try {
        await adopt(r);
      } catch (err) {
        failure ??= err;
      } finally {
        // Its run counts in the job's permits now (or it did not start): the kept one goes back.
        if (r.permit) this.state.limits.unkeep(r.permit.spec, r.permit.until);
      }
    }
    if (failure !== undefined) throw failure;
  }

  /**
   * Asks the store about every remembered claim (see the class comment); returns the grants that
   * turned out to be this node's, to be started by the caller, and the store failure that stopped
   * the asking, if one did (the claims not asked about yet stay remembered). The grants found
   * before a failure are returned with it: they are no longer remembered, so dropping them with
   * the failure lost them — held by this node, never started, every other node refused
   * (simulator, sharded stored schedules with lost replies: 1 of 30 seeds).
   */
  async resolve(): Promise<{ ours: Extract<Resolution, { kind: 'ours' }>[]; failure?: unknown }> {
    const ours: Extract<Resolution, { kind: 'ours' }>[] = [];
    for (const [key, p] of [...this.pending]) {
      let r: Resolution;
      try {
        r = await this.resolveOne(key, p);
      } catch (failure) {
        return { ours, failure };
      }
      this.pending.delete(key);
      if (r.kind === 'ours') ours.push({ ...r, ...(p.permit && { permit: p.permit }) });
      else if (p.permit) this.state.limits.unkeep(p.permit.spec, p.permit.until);
    }
    return { ours };
  }

  private async resolveOne(key: string, { c, sentAt }: Pending): Promise<Resolution> {
    const s = this.state;
    const lease = await s.store.inspect(key);
    if (
      lease !== null &&
      lease.owner === s.node &&
      !s.runningHere.has(key) &&
      !(await grantUsed(s, c.occ, lease.token))
    ) {
      let gate: Lease | null | undefined;
      // A takeover or a queued run asks for its gate only once it has the occurrence (claim.ts,
      // gateAfterWin), under an owner naming this grant (gateOwner): if that acquire's answer was
      // the one lost, the gate is this claim's and is adopted with it; else it is asked for then.
      if (c.gate) {
        const gateKey = gateOf(c.occ);
        const held = await s.store.inspect(gateKey);
        // Granted by the same acquire: this node's, at the same store instant.
        const mine = held?.owner === s.node || held?.owner === `${s.node}${REPLAY_MARK}`;
        if (gateAfterWin(c)) {
          if (held && held.owner === gateOwner(s.node, c, lease)) gate = held;
        } else if (held && mine && held.acquiredAt === lease.acquiredAt) gate = held;
        else if (held === null) {
          const request = { key: gateKey, owner: s.node, leaseMs: lease.expiresAt - lease.acquiredAt };
          [gate] = await s.store.acquire([request]);
          gate ??= null;
        } else gate = null;
      }
      return { kind: 'ours', c, lease, gate, sentAt };
    }
    if (lease === null) await offerAgain(this.state, c);
    return { kind: 'settled' };
  }
}

/**
 * Nobody holds the occurrence: it was never granted, or granted and its lease ran out before
 * anything of it was recorded (every other node was refused it meanwhile and moved on). Make sure
 * it is run or accounted for:
 *  - a due entry's claim that moves it on (shard 0): the entry is read again (it moves on only
 *    when that run starts);
 *  - a stored schedule's other shard items: no read finds them again once shard 0 has moved the
 *    entry on for good (its moves forget the fire time two leases after it), so — not on
 *    record — they are recovered like a job trigger's below, from NodeState.dueRecoveries
 *    (found by the simulator: a reply lost while the store applied the claim, its lease lapsed
 *    before the node asked);
 *  - a job trigger's fire time above the high-water mark (`cursorBack`: this node's own claim,
 *    whose acquire got no answer): no later fire time has started anywhere, so the cursor moves
 *    back before it and the misfire policy judges it with whatever else was missed since — the
 *    acquire may never have reached the store (the cluster cut off from it);
 *  - otherwise — one at or below the mark (a later fire time has already started, so the misfire
 *    scan, which starts at the mark, would never see it: found by the simulator, a reply lost
 *    while the node backed off past the lease), or one another node was granted (watch.ts) — some
 *    node claimed it in time and never started it: it is run now as a recovery (source
 *    `recover`, a new grant and so a higher token; waiting behind a run that holds the overlap
 *    gate), whatever the misfire policy and `recover` say: those are for fire times nobody could
 *    claim in time, and for runs that started and died. Late by at most one lease (+ a poll).
 */
export async function offerAgain(s: NodeState, c: Candidate, cursorBack = true): Promise<void> {
  if (c.entryReadAt !== undefined) {
    s.dueWakeAt = 0;
    if (movesEntry(c)) return;
  }
  if (c.source !== 'schedule' && c.source !== 'misfire' && !c.unstarted) return;
  const source = s.sources.get(sourceKey(c.occ.job, c.occ.scheduleId));
  const job = s.defined.get(c.occ.job);
  if (!job || (!source && c.occ.scheduleId === undefined)) return;
  const F = c.occ.fireTime;
  if (source && cursorBack) {
    const stored = await s.store.get(keys.highWater(c.occ.job, c.occ.scheduleId));
    if (stored === null || Number(stored) < F) {
      rewind(source, F);
      return;
    }
  }
  // Handled after all (on-record.ts): it has a history, in-flight or queued record.
  if ((await accountedFor(s, [c.occ]))[0]) return;
  s.telemetry.log?.(
    'info',
    `oncely: ${c.occ.job}: a claim of it was granted and never started; recovering it`,
    {
      job: c.occ.job,
      fireTime: new Date(F).toISOString(),
      node: s.node,
      ...(c.occ.shard !== undefined && { shard: c.occ.shard }),
    },
  );
  if (!source) {
    recoverDueShard(s, job, c);
    return;
  }
  const queued = source.queue.find((q) => q.fireTime === F);
  if (queued) {
    if (!queued.shards.includes(c.occ.shard)) queued.shards.push(c.occ.shard);
    return;
  }
  source.queue.unshift({
    fireTime: F,
    ...(c.scheduledAt !== undefined && { at: c.scheduledAt }),
    source: 'recover',
    shards: [c.occ.shard],
    graceMs: 0,
  });
}

/** Queues a stored schedule's shard item for recovery by the next ticks (see {@link offerAgain}). */
function recoverDueShard(s: NodeState, job: Job, c: Candidate): void {
  const key = keys.occurrence(c.occ);
  s.dueRecoveries.delete(key);
  s.dueRecoveries.set(key, {
    occ: c.occ,
    ...(c.scheduledAt !== undefined && { scheduledAt: c.scheduledAt }),
    source: 'recover',
    data: c.data,
    attempt: 1,
    gate: job.spec.overlap !== 'allow',
    unstarted: true,
  });
  for (const k of s.dueRecoveries.keys()) {
    if (s.dueRecoveries.size <= MAX_DUE_RECOVERIES) break;
    s.dueRecoveries.delete(k);
  }
  s.dueWakeAt = 0;
}

/**
 * Whether this lease of the occurrence was already used: its token is on an in-flight or history
 * record of the occurrence (the grant was run, or recorded skipped), or an attempt of it ended.
 * Two reads; only for a lost grant that turned out to be this node's.
 */
async function grantUsed(s: NodeState, occ: OccurrenceId, token: number): Promise<boolean> {
  const [inflight, history] = await Promise.all([s.store.get(keys.inflight(occ)), occurrenceHistory(s, occ)]);
  if (inflight !== null && (JSON.parse(inflight) as InflightRecord).token === token) return true;
  return history.some((e) => e.token === token || FINAL_STATUSES.has(e.status));
}
