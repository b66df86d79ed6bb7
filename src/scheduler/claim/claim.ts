import type { SpanContext } from '@opentelemetry/api';
import type { Lease, LeaseRequest, WriteOp } from '../../store/types.js';
import { MAX_BATCH } from '../../store/validate.js';
import { noteChainStep } from '../due/due-scan.js';
import { settle } from '../finish/settle.js';
import { type Candidate, consumeOps, gateAfterWin, rewind, sourceKey } from '../internal-types.js';
import { keys } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { sinceOf } from '../run/run-records.js';
import type { Runs } from '../run/runs.js';
import { withAdmitted } from './admit.js';
import { backfillClaimed, backfillRefused } from './backfill-claim.js';
import { deadAttempt, inflightOf, occurrenceEnded } from './dead-attempt.js';
import { earlyGrant } from './early-grant.js';
import { entryMoved } from './entry-moved.js';
import { gateRequest } from './gate-owner.js';
import { doneHold, doneUntil } from './high-water.js';
import { lateLook } from './late-look.js';
import type { Overlap } from './overlap.js';
import { PageClaims } from './page-claims.js';
import { behindHeldShardZero, settleOfPartlyClaimed } from './partly-claimed.js';
import { withoutAccounted } from './takeovers-on-record.js';
import { Unanswered } from './unanswered.js';
import { Watch } from './watch.js';

/** Claims candidates (occurrences and their overlap gates) in batched acquires, and starts what it won. */
export class Claims {
  constructor(
    private readonly state: NodeState,
    private readonly overlap: Overlap,
    private readonly runs: Runs,
  ) {
    this.unanswered = new Unanswered(state);
    this.watch = new Watch(state);
    this.pages = new PageClaims(state, runs);
    state.lapsedClaim = (c, sentAt) => this.unanswered.add([c], sentAt);
    state.heldElsewhere = (c) => this.watch.refused(c);
  }

  /** Due entries of jobs claimed in pages (page/page-claims.ts). */
  private readonly pages: PageClaims;
  /** Fire times another node won, looked at again after its lease (watch.ts). */
  private readonly watch: Watch;
  /** Claims whose acquire got no answer, asked about before the next claims. */
  private readonly unanswered: Unanswered;

  /**
   * Starts the grants whose answer was lost (unanswered.ts) and re-offers what nobody holds; call
   * before building a tick's candidates. Throws (leaving them remembered) while the store fails.
   */
  async resolveUnanswered(): Promise<void> {
    if (this.unanswered.size > 0)
      await this.unanswered.adoptAll((r) => this.afterClaim(r.c, r.lease, r.gate, r.sentAt));
    await this.watch.check();
  }

  /**
   * One round trip for every due occurrence (and the overlap gates they need), limited to this
   * node's free slots (an overloaded node leaves work to others) and the fleet limits (admit.ts).
   */
  async claimAndRun(candidates: Candidate[], reserved = false): Promise<void> {
    const s = this.state;
    if (candidates.length === 0 || s.stopping?.signal.aborted) return;
    const fitting = candidates.slice(0, Math.max(0, s.freeSlots()));
    if (!reserved) return withAdmitted(s, fitting, (admitted) => this.claimAndRun(admitted, true));
    // Pages go their own way (one claimPage per page; the move decides, so no takeover look-up).
    const paged = fitting.filter((c) => c.pageMove !== undefined);
    const pages = paged.length > 0 ? this.pages.claim(paged) : undefined;
    // Awaited below, after the takeover look-up: a rejection meanwhile must not go unhandled.
    pages?.catch(() => {});
    const batch = await withoutAccounted(
      s,
      this.watch,
      paged.length > 0 ? fitting.filter((c) => c.pageMove === undefined) : fitting,
    );
    if (batch.length === 0) {
      await pages;
      return;
    }
    const { telemetry } = s;
    const tracing = telemetry.tracing;
    const requests: LeaseRequest[] = [];
    const index: { occ: number; gate: number | undefined }[] = [];
    const gates = new Set<string>();
    const occs = new Set<string>();
    for (const c of batch) {
      telemetry.claim(c.occ.job, 'attempted');
      const spec = s.defined.get(c.occ.job)!.spec;
      const key = keys.occurrence(c.occ);
      const occ = requests.push({ key, owner: s.node, leaseMs: spec.lockAtMostForMs }) - 1;
      let gate: number | undefined;
      // Behind an older fire time waiting at its gate: the gate is asked for only if that one ran
      // meanwhile (Overlap.yieldsGate). An occurrence asked for twice in one acquire (its queued
      // run and a backfill of its fire time) is granted to the first request only: the gate asked
      // with the second went to a claim that lost, while the winner found it taken and waited —
      // at every poll (simulator, mix5, seed 15: `tick@+4 s` waited 13 s, +6..+8 s never ran).
      if (c.gate && (this.overlap.yieldsGate(c) || occs.has(key))) c.gateAfterWin = true;
      occs.add(key);
      if (c.gate && !gateAfterWin(c)) {
        const request = gateRequest(s.node, c, spec.lockAtMostForMs);
        // One request per gate and acquire (see Candidate.gateAfterWin).
        if (gates.has(request.key)) c.gateAfterWin = true;
        else {
          gates.add(request.key);
          gate = requests.push(request) - 1;
        }
      }
      index.push({ occ, gate });
    }
    // One acquire per MAX_BATCH requests (an occurrence and its gate stay in the same batch); the
    // batches go out together.
    const slices: { from: number; to: number }[] = [];
    for (let from = 0; from < batch.length; ) {
      let to = from;
      while (to < batch.length && (index[to]!.gate ?? index[to]!.occ) - index[from]!.occ < MAX_BATCH) to++;
      slices.push({ from, to });
      from = to;
    }
    const claimed = Promise.all(
      slices.map(async ({ from, to }) => {
        const offset = index[from]!.occ;
        const end = index[to - 1]!.gate ?? index[to - 1]!.occ;
        const sentAt = s.clock.monotonic();
        const span = tracing?.claim(s.node, to - from);
        const link = span && tracing?.linkOf(span);
        let leases: (Lease | null)[];
        try {
          leases = await s.store.acquire(requests.slice(offset, end + 1));
        } catch (err) {
          // No answer: the store may have granted them anyway (unanswered.ts).
          this.unanswered.add(batch.slice(from, to), sentAt);
          if (span) tracing?.claimEnded(span, 0, 0, err);
          throw err;
        }
        let won = 0;
        let refused = 0;
        try {
          await Promise.all(
            batch.slice(from, to).map(async (c, i) => {
              const at = index[from + i]!;
              const lease = leases[at.occ - offset] ?? null;
              const gate = at.gate === undefined ? undefined : (leases[at.gate - offset] ?? null);
              const outcome = await this.afterClaim(c, lease, gate, sentAt, link);
              if (outcome === 'won') won++;
              else if (outcome === 'refused') refused++;
            }),
          );
        } finally {
          if (span) tracing?.claimEnded(span, won, refused);
        }
      }),
    );
    await Promise.all([claimed, pages]);
  }

  /**
   * What became of one answered claim: `won` (run, settled or queued behind its gate), `refused`
   * (someone else holds it), `returned` (given back: too early, too late, no gate). Throws when a
   * store call failed; a won claim is then remembered as unanswered.
   */
  private async afterClaim(
    c: Candidate,
    lease: Lease | null,
    initialGate: Lease | null | undefined,
    sentAt: number,
    claimSpan?: SpanContext,
  ): Promise<'won' | 'refused' | 'returned'> {
    let outcome: 'won' | 'refused' | 'returned';
    try {
      outcome = await this.settleClaim(c, lease, initialGate, sentAt, claimSpan);
    } catch (err) {
      // A won claim whose handling failed on a store call (the overlap look-up, a takeover's
      // gate): the occurrence stays held by this node, unrun and unrecorded, while every other
      // node was refused it. The next tick asks the store about it again (unanswered.ts) rather
      // than leave its fire time to lapse under a later run's high-water mark.
      if (lease) this.unanswered.add([c], sentAt);
      throw err;
    }
    if (outcome !== 'returned') this.state.telemetry.claim(c.occ.job, outcome);
    if (outcome === 'won') noteChainStep(this.state, c);
    return outcome;
  }

  private async settleClaim(
    c: Candidate,
    lease: Lease | null,
    initialGate: Lease | null | undefined,
    sentAt: number,
    claimSpan: SpanContext | undefined,
  ): Promise<'won' | 'refused' | 'returned'> {
    const s = this.state;
    const job = s.defined.get(c.occ.job)!;
    const free = (l: Lease): WriteOp => ({ op: 'release', key: l.key, token: l.token });
    let gate = initialGate;
    if (!lease) {
      // Someone else has (or had) it; a gate we won for it is returned at once (retried if the
      // store fails: a gate left held would skip the job's next fire times until its lease ends).
      if (gate) await settle(s, `release of ${c.occ.job}`, [free(gate)], gate, sentAt);
      // Looked at again when the holder's lease would have ended (watch.ts).
      if (c.source === 'backfill') await backfillRefused(s, c);
      else if (!(await this.overlap.droppedStale(job, c))) this.watch.refused(c);
      return 'refused';
    }
    const askGate = async () =>
      (await s.store.acquire([gateRequest(s.node, c, job.spec.lockAtMostForMs, lease)]))[0] ?? null;
    /** The occurrence (and the gate won with it) freed at once, for another claim to take. */
    const freeClaim = () =>
      settle(s, `release of ${c.occ.job}`, [free(lease), ...(gate ? [free(gate)] : [])], lease, sentAt);
    // Consumed (as read) and settled "done", never run: the fire time already ran to its end (or
    // was settled unrun with `ops`). `hold` false: freed instead (for recovery to take).
    const settleDone = (what: string, ops: WriteOp[] = [], hold = true) => {
      const done = {
        op: 'release' as const,
        key: lease.key,
        token: lease.token,
        ...(hold && {
          holdUntil: doneUntil(c.occ.fireTime, lease, sentAt, s.clock.monotonic(), doneHold(job)),
        }),
      };
      const frees = gate ? [free(gate)] : [];
      return settle(s, what, [...consumeOps(c), ...ops, done, ...frees], lease, sentAt);
    };
    // Granted before its start: kept and waited for, claimed ahead, or given back (early-grant.ts).
    const { start, ahead, wait, giveBack, notBefore } = earlyGrant(s, job, c, lease, gate);
    if (wait && notBefore === undefined && !giveBack)
      await s.clock.sleep(Math.ceil(ahead * 1.05) + 1, s.stopping?.signal);
    const early = ahead > 0 && (!wait || giveBack || s.stopping?.signal.aborted === true);
    // A due entry read more than a done hold before this grant (this node paused, or waited for
    // slots, between its read and its claim): another node may have run the occurrence, moved the
    // entry on, and its "done" hold (at least a done hold after settling, see doneUntil) may have
    // ended since. Refused; a fresh read of the index says what is due. Judged from the read, not
    // from the fire time: an entry far behind (an outage) is claimed long after its fire time.
    const late = c.entryReadAt !== undefined && lease.acquiredAt - c.entryReadAt > doneHold(job);
    if (early || late) {
      // Never early: the store's clock had not reached the fire time. Give it back and retry.
      if (c.entryReadAt !== undefined)
        s.dueWakeAt = Math.min(s.dueWakeAt, late ? 0 : (c.scheduledAt ?? c.occ.fireTime));
      const source =
        c.entryReadAt !== undefined ? undefined : s.sources.get(sourceKey(c.occ.job, c.occ.scheduleId));
      if (source && c.source === 'schedule') rewind(source, c.occ.fireTime);
      if (source && giveBack) source.notAhead = c.occ.fireTime;
      await freeClaim();
      return 'returned';
    }
    if (gateAfterWin(c) && c.gate) {
      // The gate of a takeover or a queued run, asked for now that the occurrence is won (see
      // gateAfterWin).
      // No answer: the occurrence is kept, not given back — every other node has moved past it —
      // and asked about again at the next tick (the throw makes it unanswered, see afterClaim).
      // A gate granted unheard names this claim's lease (gateOwner): the next tick adopts it too.
      // Not asked for again when adopted so (unanswered.ts).
      if (gate === undefined && !this.overlap.yieldsGate(c)) gate = await askGate();
    }
    if (c.settleOnly) {
      // Missed fire times of a due entry: skipped (or jumped to the one to replay), kept "done" —
      // only if the entry is still where this node read it (entry-moved.ts) and no shard of it
      // was claimed (partly-claimed.ts: then run, not missed); else given back.
      if ((await entryMoved(s, c.settleOnly)) || (await settleOfPartlyClaimed(s, job, c))) {
        await freeClaim();
        return 'returned';
      }
      // A run of this fire time that started and died — a backfill's: it moves no entry — has its
      // in-flight record; held "done" over it, recovery passed it over for the whole hold (seed 62
      // of the simulator's queue, jitter and backfill mix: jbf/jb0@+4 s never finished). Freed for
      // recovery instead. One get, for missed entries claimed per occurrence only (pages hold none).
      const dead = await inflightOf(s, c.occ);
      c.onWon?.();
      // A pause's span (control/pause-span.ts) goes with the settle: written by this winner only.
      const span = c.pausedSpan ? [c.pausedSpan(lease.token, lease.acquiredAt)] : [];
      await settleDone(`misfire handling of ${c.occ.job}`, [...c.settleOnly, ...span], dead === undefined);
      return 'won';
    }
    // Any claim won from a read of the due index likewise, before its batch (a start, a queue,
    // a skip) moves the entry with a delete and a put, which put back an entry another node had
    // moved on since the read. A fire time queued or waiting behind its gate frees its occurrence,
    // so a node whose read predates that queue wins it afresh (entry-moved.ts: seeds 410 and 76).
    // Given back: the mover handled the fire time. One get, for per-occurrence claims of due
    // entries only (pages move with a compare-and-move; job triggers move no entry). Under this
    // claim's lease no other claimant of the fire time can move the entry after the look. A late
    // shard after the first waits for the first's fate (partly-claimed.ts).
    if (
      (c.entryReadAt !== undefined && c.fromPending !== true && (await entryMoved(s, c.advance))) ||
      (await behindHeldShardZero(s, job, c, lease))
    ) {
      await freeClaim();
      return 'returned';
    }
    c.onWon?.();
    // A queued run's in-flight record was read by its poll; any other claim looks now if it is late.
    const after = c.deadRun !== undefined ? { deadRun: c.deadRun } : await lateLook(s, job, c, lease);
    if (after.ended) {
      // See lateLook: settled "done" again, never run or skipped over.
      await settleDone(`late claim of ${c.occ.job}`);
      return 'won';
    }
    // Excluded (its trigger's `exclude` list): recorded skipped, never run — unless a run of it
    // started meanwhile and died (a calendar changed under it): that run is recovered below.
    if (c.excluded && after.deadRun === undefined) {
      await this.overlap.excluded(job, c, lease, sentAt);
      return 'won';
    }
    // Never ahead of an older fire time of its gate still to run (overlap.ts); one known to wait
    // there was not asked for its gate (yieldsGate), which is asked for now if it ran meanwhile.
    if (
      c.gate &&
      gate !== null &&
      (await this.overlap.behindOlder(job, c, lease, gate, sentAt, after.deadRun))
    )
      return 'won';
    if (c.gate && gate === undefined) gate = await askGate();
    if (gate === null) {
      await this.overlap.overlapped(job, c, lease, sentAt, after.deadRun);
      return 'won';
    }
    // A backfill runs only if its fire time has not run, as the next attempt (backfill-claim.ts).
    if (c.source === 'backfill' && !(await backfillClaimed(s, c, lease, gate, sentAt))) return 'won';
    // The high-water mark is raised with the run's in-flight record (until then the held claim
    // tells a late node the fire time was handled; a claim never started leaves it to the misfire
    // policy). A trigger request, a pending record (only as read: one rewritten meanwhile is a
    // newer fire time queued behind this run, consumeOps) and a due entry's move (`advance`) go in
    // that batch (retried while the claim holds): gone exactly when the run is on record.
    // A queued run whose fire time already ran to its end (or was recorded skipped): consumed
    // (as read) and settled "done", never run again (occurrenceEnded; lateLook may have read it).
    if (c.fromPending && (after.ended ?? (await occurrenceEnded(s, c.occ)))) {
      await settleDone(`stale queued run of ${c.occ.job}`);
      return 'won';
    }
    // A queued run with a later one queued behind the same gate: recorded skipped (overlap.ts) —
    // unless a run of it started meanwhile and died: freed for recovery, under its gate.
    if (c.superseded) {
      if (await this.overlap.superseded(job, c, lease, sentAt, after.deadRun)) return 'won';
      await freeClaim();
      return 'returned';
    }
    // A queued run whose fire time another node ran meanwhile, and whose run died: this run is
    // its recovery — next attempt, the dead one recorded abandoned (dead-attempt.ts). Likewise a
    // claim won a whole lease after the fire time (a node whose cursor lagged, a replay): a run of
    // this fire time may have started and died meanwhile (lateLook).
    const dead = after.deadRun === undefined ? undefined : deadAttempt(s, c.occ, after.deadRun, lease);
    const startWrites: WriteOp[] = [
      ...(dead?.startWrites ?? []),
      ...(c.startWrites ?? []),
      ...(c.advance ?? []),
      ...consumeOps(c),
    ];
    this.runs.launch(
      job,
      {
        occ: c.occ,
        lease,
        gate: gate ?? undefined,
        sentAt,
        attempt: dead?.attempt ?? c.attempt,
        // Following a dead run, the run is its recovery, and says so (history, events, a later
        // recovery's in-flight record); a replay's end still wakes the next replay (`replay`).
        source: dead ? 'recover' : c.source,
        ...(c.source === 'misfire' && { replay: true as const }),
        ...(c.scheduledAt !== undefined && { scheduledAt: c.scheduledAt }),
        // Claimed ahead: started at its start, as its in-flight record says from now on.
        ...(notBefore !== undefined && { startedAt: start, notBefore }),
        data: c.data,
        ...(startWrites.length > 0 && { startWrites }),
        ...(after.deadRun !== undefined && dead !== undefined
          ? { runningSince: sinceOf(after.deadRun) }
          : c.runningSince !== undefined && { runningSince: c.runningSince }),
        ...(claimSpan !== undefined && { claimSpan }),
      },
      // Never started, nothing on record (the start batch failed until the lease ended, e.g. an
      // answer that came after it): asked about again at the next tick, as an unanswered claim.
      () => this.unanswered.add([c], sentAt),
    );
    return 'won';
  }
}
