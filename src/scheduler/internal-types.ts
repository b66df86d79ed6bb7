import type { CompiledExclude } from '../schedule/exclude.js';
import type { CompiledJitter } from '../schedule/jitter.js';
import type { CompiledTrigger } from '../schedule/trigger.js';
import type { WriteOp } from '../store/types.js';
import type { JobSpec } from './job-options.js';
import type { OccurrenceId } from './keys.js';
import type { InflightRecord, RunningSince } from './run/run-records.js';
import type { JobHandler, RunSource } from './types.js';

/** A job defined on this node. */
export interface Job {
  spec: JobSpec;
  handler: JobHandler;
}

/** One stream of fire times: a job's own trigger, or one stored schedule of it. */
export interface Source {
  job: string;
  scheduleId: string | undefined;
  trigger: CompiledTrigger;
  /** The trigger's jitter (due/jittered.ts): each fire time is claimed from its fire time plus its offset. */
  jitter?: CompiledJitter | undefined;
  /** The trigger's exclusions (schedule/exclude.ts): a fire time matching one is claimed to be recorded skipped. */
  exclude?: CompiledExclude | undefined;
  data: unknown;
  /** Every fire time up to and including this one has been handled by this node's view. */
  cursor: number | undefined;
  /**
   * A fire time whose claim ahead of its start was given back (claim/early-grant.ts: its gate was
   * refused or is asked for only after the win, or the node is stopping): claimed again at its
   * start, not ahead (due/claim-lead.ts).
   */
  notAhead?: number;
  /** The next fire time after `after` (cron maths is not free, and the loop asks after every tick). */
  next?: { after: number; at: number | undefined };
  /**
   * The same for one later instant: the fire time after the one a tick is offering (its spread
   * grace, and the source's next due time once the cursor moves there), so that a tick computes
   * it once per source instead of three times.
   */
  ahead?: { after: number; at: number | undefined };
  /**
   * Occurrences the cursor is past whose shard items (or the occurrence itself, `[undefined]`)
   * were not all offered yet: no free slot for them (offered first at the next ticks, as slots
   * free up), or another node goes first for them (offered here after the grace, spread.ts).
   * Oldest first.
   */
  queue: QueuedOccurrence[];
  /** The latest fire time announced as a misfire replay (catch-up offers it each tick until claimed). */
  announced?: number;
}

/** See `Source.queue`. */
export interface QueuedOccurrence {
  fireTime: number;
  /** When it is to start (fire time plus jitter), when that is not its fire time. */
  at?: number;
  /** `recover`: a claim granted and never started (Candidate.unstarted). */
  source: 'schedule' | 'misfire' | 'recover';
  /** The shards not offered yet (`undefined`: the job is not sharded). */
  shards: (number | undefined)[];
  /** How long after the fire time this node waits for the preferred node (spread.ts, spreadGrace). */
  graceMs: number;
}

/** A due entry's compare-and-move (due/move-past.ts): `from` to `to`, the moved entry's value. */
export interface EntryMove {
  from: string;
  to: string;
  value: string;
  /** (`to` is `dueend|…`: its trigger has no next fire time) how long the moved record lives. */
  ttlMs?: number;
  /** `to` is `dueend|…`: without a page claim's move, the entry is only deleted. */
  ended?: true;
}

/** An occurrence this node is about to try to claim. */
export interface Candidate {
  occ: OccurrenceId;
  /**
   * When the occurrence is to start: its fire time plus its jitter (schedule/jitter.ts); absent
   * without jitter. Never claimed before it (store clock); the run's ctx.scheduledAt.
   */
  scheduledAt?: number;
  source: RunSource;
  data: unknown;
  attempt: number;
  /** Run after the claim; otherwise (missed-and-skipped) only mark. */
  gate: boolean;
  /**
   * The fire time matches its trigger's `exclude` list (decided by due/, schedule/exclude.ts):
   * once won, recorded skipped with reason `excluded` and marked handled, never run — in the same
   * writes an overlap skip makes (claim/overlap.ts; a page's start write for a page item). Never
   * asks for an overlap gate (`gate` false).
   */
  excluded?: true;
  /** (A backfill) when this node first read its request, store time (claim/gated-runs.ts). */
  seenAt?: number;
  /** A trigger request or pending record this candidate stands for: deleted once it is claimed. */
  consumes?: string;
  /**
   * The pending record's value as read (with `fromPending`): it is consumed only while it still
   * holds exactly this (see {@link consumeOps}).
   */
  consumesValue?: string;
  /** Written together with the run's in-flight record (recovery: the dead attempt's history). */
  startWrites?: WriteOp[];
  /** (A recovery) the run it recovers (InflightRecord.runningSince). */
  runningSince?: RunningSince;
  /** Comes from a pending (overlap queue) record (the one `consumes` names). */
  fromPending?: true;
  /**
   * (A pending record's run) it waits behind its gate rather than being queued there: when it was
   * claimed, no run of the gate had started before its fire time (overlap.ts). Never superseded;
   * skipped only if a run that started before its fire time is found going (overlapping-run.ts).
   */
  waiting?: true;
  /**
   * A claim of this fire time was granted (to some node) and never started — its reply lost, its
   * node frozen or killed before the start record — and its lease lapsed: run now as a recovery
   * (source `recover`, a new grant, so a higher token), whatever the misfire policy, which is for
   * fire times nobody could claim in time (unanswered.ts, offerAgain). Behind a held gate it waits.
   */
  unstarted?: true;
  /**
   * (A pending record's run) a later fire time is queued behind the same gate: once won, this one
   * is recorded skipped for overlap rather than run (Overlap.superseded). Never set with `deadRun`.
   */
  superseded?: true;
  /** (With `superseded`) the later queued fire time that replaces it. */
  supersededBy?: number;
  /**
   * (A pending record's run) the in-flight record of its occurrence, read in the same poll: a
   * run of this fire time that started by another path — its start does not consume the pending
   * record — and, if this claim wins the occurrence, died (dead-attempt.ts).
   */
  deadRun?: InflightRecord;
  /**
   * The writes that mark this occurrence handled, sent with whatever settles it (the run's start
   * batch, the overlap skip/queue batch): for a stored schedule's due entry, the entry moved on
   * (due-index.ts). Absent: the high-water mark of the job's own trigger.
   */
  advance?: WriteOp[];
  /**
   * (A stored schedule with maxRuns, control/runs-left.ts) the writes in place of `advance` when
   * the occurrence, once won, is not run (skipped for overlap, excluded): the entry moves on
   * without counting a run.
   */
  advanceIfUnrun?: WriteOp[];
  /**
   * Claimed only to be settled, never run (a due entry's missed fire times skipped, or jumped to
   * the one to replay): written with the occurrence released "done".
   */
  settleOnly?: WriteOp[];
  /**
   * Claimed after the grace, for another node that was to go first (spread.ts): usually refused.
   * Its overlap gate is asked for only once the occurrence is won, so a refused takeover never
   * holds the gate, even briefly, against the next fire time's run.
   */
  takeover?: true;
  /**
   * An on-time fire time claimed ahead of its start by the node that goes first for it
   * (due/claim-lead.ts): a grant that came before the start is kept, and its run's handler waits
   * for the start (claim.ts).
   */
  ahead?: true;
  /**
   * Set by claimAndRun when an earlier candidate of the same acquire asks for the same overlap
   * gate: this one asks for it only once it has won its occurrence (see gateAfterWin). A node
   * back from a pause offers several fire times of one job at once; in one acquire the first
   * took the gate — one that another node had run already, refused and given back — and the
   * next, won, found its gate taken by its own neighbour and was recorded skipped.
   */
  gateAfterWin?: true;
  /**
   * (A due entry's late fire time, planned as on time behind a page in flight: due-entry.ts) the
   * entry planned again as behind none — by the misfire policy — at store time `now`: what the
   * claim takes instead when that page's run is found ended (claim/prev-run.ts, `missed`).
   */
  replanLate?: (now: number) => Candidate[];
  /**
   * (A due entry of a job claimed in pages, page/eligible.ts) the move that claims it: the entry
   * `from` moved to `to` (its next fire time `next`, or `dueend|…` when there is none); `v` is the
   * schedule's version; `prev` the page run its entry names, when that page was still in flight at
   * the read (page/prev-run.ts). The candidate's `advance`/`settleOnly` writes are then not used:
   * the move is all of them.
   */
  pageMove?: {
    from: string;
    to: string;
    next: number | undefined;
    v: string;
    prev?: { page: string; fireTime: number };
    /** The page that moved the entry, when it is another than `prev`'s and was in flight at the read. */
    mover?: string;
    /** (maxRuns, control/runs-left.ts) the runs left the moved entry carries. */
    left?: number;
    /** Store time of the upsert that replaced the schedule, when the entry names no run in flight (claim/replaced-prev.ts). */
    replacedAt?: number;
    /** (maxRuns, a run) the remaining-runs record's move, in the same claim. */
    count?: { from: string; to: string };
    /** (maxRuns, a run) the move instead, when the page records the fire time skipped: nothing counted. */
    unrun?: { to: string; next: number | undefined; left: number };
  };
  /**
   * (A due entry's claim of a missed fire time, per occurrence) the entry's move past this fire
   * time alone: made if the claim is refused and the fire time found held "done" while the entry
   * still names it — some other path ran it (a backfill), see due/move-past.ts.
   */
  movePast?: EntryMove;
  /** Called once this node has won the claim (a due entry's misfired event). */
  onWon?: () => void;
  /**
   * (A due entry's missed fire times left by a pause, settled by this claim) their one `paused`
   * history entry (control/pause-span.ts), written by the winner only: with `settleOnly` (claim.ts)
   * or with the started mark of its page (page-claims.ts).
   */
  pausedSpan?: (token: number, at: number) => WriteOp;
  /**
   * Comes from a due entry read at this store time: a grant more than a done hold after the read
   * is refused (claim.ts).
   */
  entryReadAt?: number;
}

/**
 * Whether a candidate asks for its overlap gate only once it has won its occurrence, in a second
 * acquire, rather than in the same one: a takeover (usually refused, see Candidate.takeover), and
 * a queued run (fromPending). A gate's queued runs are all offered at each poll, in fire-time
 * order, and one acquire grants a key to its first request only: a queued run whose occurrence
 * another node holds (run there, "done" for an hour) took the gate ahead of the others at every
 * poll, gave it back, and the runs waiting behind it never got it (simulator, tick seed 16). And
 * any candidate whose gate an earlier candidate of the same acquire asks for already
 * (`Candidate.gateAfterWin`, set by claimAndRun).
 */
export function gateAfterWin(c: Candidate): boolean {
  return c.takeover === true || c.fromPending === true || c.gateAfterWin === true;
}

/**
 * A candidate read from a due entry that moves the entry on when it is claimed (shard 0: the
 * move, the settling of missed fire times, or a page's move). The entry is read again until that
 * claim runs, so such a candidate needs no other trace; the other shards of a sharded stored
 * schedule (and the shards a moved entry offers again, DueEntry.pending) do not move it.
 */
export function movesEntry(c: Candidate): boolean {
  return c.advance !== undefined || c.settleOnly !== undefined || c.pageMove !== undefined;
}

/** A source's key in `NodeState.sources`. */
export function sourceKey(job: string, scheduleId: string | undefined): string {
  return `${job}\u0000${scheduleId ?? ''}`;
}

/** A claim another node won, watched by this node (claim/watch.ts): `at` is the local monotonic time of its next look. */
export interface WatchedClaim {
  c: Candidate;
  at: number;
}

/** When a candidate is to start: its fire time plus jitter (`scheduledAt`), else its fire time. */
export function startOf(c: Candidate): number {
  return c.scheduledAt ?? c.occ.fireTime;
}

/** The shards an occurrence of the job fans out to (`[undefined]` when it is not sharded). */
export function shardsOf(job: Job): (number | undefined)[] {
  return job.spec.shards ? Array.from({ length: job.spec.shards.count }, (_, i) => i) : [undefined];
}

/**
 * The write that consumes what a candidate stands for (nothing when it stands for nothing).
 *
 * A pending record is deleted only if it still holds the value this node read (compare-and-
 * delete). Race (from when a gate had one pending record, rewritten by each queueing): while this
 * candidate's claim is being settled (its start batch waits in the write batcher), another node
 * may claim the next fire time on time, find the gate held by this run and queue that fire time
 * behind it; a blind delete of a rewritten record would remove the newer fire time's only trace —
 * its occurrence is released and its high-water mark raised with the queueing, so nothing would
 * run or record it. Records are per fire time now (keys.pending), so the newer one has a key of
 * its own; the compare still keeps a record rewritten for the same fire time (a different source
 * or data) from being deleted unread. A trigger request's key is unique to its request and never
 * rewritten, so it is deleted plainly.
 */
export function consumeOps(c: Candidate): WriteOp[] {
  if (c.consumes === undefined) return [];
  return [
    c.consumesValue === undefined
      ? { op: 'delete', key: c.consumes }
      : { op: 'delete', key: c.consumes, ifValue: c.consumesValue },
  ];
}

/**
 * Moves the source's cursor back before `fireTime` and drops what it had queued from then on, so
 * that its next ticks offer `fireTime` again (on time, or to the misfire policy by then).
 */
export function rewind(source: Source, fireTime: number): void {
  source.cursor = Math.min(source.cursor ?? fireTime, fireTime - 1);
  source.queue = source.queue.filter((q) => q.fireTime < fireTime);
}

/**
 * A pause that ended lately (`ctl|pspan|<job>|<id>`, control/pause-span.ts): from `since` to
 * `until` (store times, epoch ms). The missed fire times a resume leaves in it are one `paused` span.
 */
export interface PauseSpan {
  since: number;
  until: number;
}

/**
 * Which stored schedules have backfill work — a request not consumed, or a run in flight — as a
 * poll read it at `at` (store time, a lower bound): claim/gated-runs.ts.
 */
export interface GateKnowledge {
  at: number;
  /** `<job>\0<schedule id>`. */
  schedules: ReadonlySet<string>;
}
