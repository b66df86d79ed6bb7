import type { StoredRecord } from '../../store/types.js';
import { SPREAD_GRACE_MS } from '../control/spread.js';
import type { Candidate } from '../internal-types.js';
import { keys, parseDueEntry } from '../keys.js';
import type { NodeState } from '../node-state.js';

/** The first page of a due scan: enough to find the next due time when nothing is due. */
const FIRST_PAGE = 64;
/** Further pages, read only while their entries are due. */
const PAGE = 1000;
/** Pages per read at most: entries passed over (paused jobs, jobs not defined here) cost bounded reads per poll. */
const MAX_PAGES = 8;
/**
 * Entries due this far ahead are read too (the key's time is the start, fire time plus jitter):
 * a jittered schedule's entry is then claimed ahead of its start (CLAIM_AHEAD_MS, due-entry.ts)
 * in a page with the others of that stretch. Reads of entries that come due one by one are then
 * about half of it apart (due-index.ts).
 */
const READ_AHEAD_MS = 2_000;

/**
 * Due entries of jobs this node runs and that are not paused (nor passed over by `skipJobs`), at
 * most `want` (entries passed over do not count), and the fire time of the first entry not due
 * yet, if it was reached.
 */
export async function scanDue(
  s: NodeState,
  now: number,
  want: number,
  resumeAfter: string | undefined,
  skipJobs?: WaitingEntries,
  stalls: Stalls = new Stalls(),
): Promise<DueScan> {
  stalls.readStart();
  const passedOver = new Set<string>();
  const read = await scanOnce(s, now, want, resumeAfter, skipJobs, stalls, passedOver);
  stalls.readDone(resumeAfter, read.truncated === undefined ? undefined : read.resumeAfter);
  if (passedOver.size > 0) read.passedOver = passedOver;
  return read;
}

/** What {@link scanDue} found. */
export interface DueScan {
  due: StoredRecord[];
  notDueAt: number | undefined;
  heldUntil: number | undefined;
  truncated?: 'full' | 'pages';
  /** Where the next read goes on (a read stopped for want of slots or after MAX_PAGES). */
  resumeAfter?: string;
  /** The jobs of `skipJobs` whose due entries this read passed over (none: undefined). */
  passedOver?: Set<string>;
}

async function scanOnce(
  s: NodeState,
  now: number,
  want: number,
  resumeAfter: string | undefined,
  skipJobs: WaitingEntries | undefined,
  stalls: Stalls,
  passedOver: Set<string>,
): Promise<DueScan> {
  const due: StoredRecord[] = [];
  // Past the grace, entries another live node goes first for (see the comment at the loop).
  const others: StoredRecord[] = [];
  let heldUntil: number | undefined;
  let after = resumeAfter;
  /** Rows read, and the start times of the first and last read: how dense the index is here. */
  let rows = 0;
  let firstAt: number | undefined;
  let lastAt: number | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const limit =
      page === 0
        ? FIRST_PAGE
        : Math.min(
            pageSize(rows, firstAt, lastAt, now + READ_AHEAD_MS),
            rowsWanted(want - due.length, due.length, rows),
          );
    const records = await s.store.scan(keys.duePrefix, { limit, ...(after !== undefined && { after }) });
    rows += records.length;
    for (const r of records) {
      // The key's time is when the occurrence is to start (its fire time plus jitter): the scan
      // stops at the first entry not due.
      const at = Number(r.key.slice(keys.duePrefix.length, keys.duePrefix.length + 15));
      firstAt ??= at;
      lastAt = at;
      // Past the last due entry: what others go first for is offered here too (steal). Returned
      // without it, a dead node's share waited until its heartbeat went stale (up to ~16 s)
      // whenever a later entry existed — nearly always: every stored schedule keeps one (the
      // simulator: 140 schedules on a 4 s and a 5 s grid and a node killed, its share 12 s
      // late, past the end of the run).
      // A jittered schedule's entry (its start is not its fire time) is read up to READ_AHEAD_MS
      // before its start, to be claimed ahead (due-entry.ts, CLAIM_AHEAD_MS); the first other
      // entry not due ends the read, as does the first jittered one past the read-ahead — read
      // again once within half of it, so that such entries are read half a read-ahead at a time.
      if (at > now + READ_AHEAD_MS)
        return {
          due: steal(due, others, want),
          notDueAt: at - READ_AHEAD_MS / 2,
          heldUntil,
        };
      const { id, fireTime } = parseDueEntry(r.key);
      if (at > now && at === fireTime) return { due: steal(due, others, want), notDueAt: at, heldUntil };
      const job = jobOfDueValue(r.value);
      const defined = s.defined.get(job);
      if (!defined || s.paused.has(job)) continue;
      // `skipJobs`: limited jobs whose entries read before still wait for permits (due-index.ts):
      // those and the job's later ones are passed over, but one lying at another node is still
      // met (Stalls) — forgotten by every such read, an entry a dead node had claimed never
      // counted as stalled while the job's other entries waited here (simulator,
      // `lim,rl,mc,pages`, sim faults, seed 2: mc/mc2@+6 s lay 7 s).
      if (skipJobs?.passesOver(job, r.key) === true) {
        passedOver.add(job);
        if (
          at + SPREAD_GRACE_MS <= now &&
          !s.pausedSchedules.has(id) &&
          !s.spread.prefersAny({ job, scheduleId: id, fireTime }, defined.spec.shards?.count)
        )
          stalls.met(r.key, now, s.pollMs);
        continue;
      }
      // A paused stored schedule (control/schedule-pause.ts): passed over, as a paused job's
      // entries are; it sets no wake-up (not `notDueAt`), so it is met again only by a read that
      // something else asked for, and costs its key in that read.
      if (s.pausedSchedules.has(id)) continue;
      // Another node goes first for all of it (spread.ts): within the grace, read again when it
      // is over (by then it has usually moved on); past the grace it is taken over only with
      // slots this node's own share leaves free (work stealing, see `steal`). Either way not
      // counted against `want`: each node reads its own share first, so that nodes working
      // through tens of thousands due at once do not all claim the same entries in key order.
      if (
        !s.spread.prefersAny({ job, scheduleId: id, fireTime }, defined.spec.shards?.count) &&
        !s.chainSteps.holds(r.key, now)
      ) {
        if (at + SPREAD_GRACE_MS > now) {
          heldUntil = Math.min(heldUntil ?? Number.POSITIVE_INFINITY, at + SPREAD_GRACE_MS);
          continue;
        }
        if (!stalls.met(r.key, now, s.pollMs)) {
          // Also of a job under `maxConcurrency` with entries waiting here for permits (`skipJobs`):
          // a catch-up chain's next step, preferred by a node that died and still counts live
          // (~11 s), waited for the stall count at every step — one replay every ~3 s for a
          // schedule every 2 s (simulator, `lim,rl,mc,pages`, sim faults, seeds 154, 259, 261).
          // Taken over, it asks permits in fire-time order beside the rest (due-permits.ts). Not
          // under a rate limit: when its starts went to whichever node asked first, more nodes
          // asking for a job's few starts a second got fewer of them started (test/simulate-
          // limits-replies.test.ts, "a retry is a start": fire times unrun by the end).
          const rated = defined.spec.limits?.rate !== undefined;
          if (others.length < want && !(rated && skipJobs?.has(job) === true)) others.push(r);
          continue;
        }
        // Left lying by its preferred node (Stalls): this node's own from now on.
      }
      due.push(r);
      if (due.length >= want) {
        return { due, notDueAt: undefined, heldUntil, truncated: 'full', resumeAfter: r.key };
      }
    }
    if (records.length < limit) return { due: steal(due, others, want), notDueAt: undefined, heldUntil };
    after = records.at(-1)!.key;
  }
  return {
    due: steal(due, others, want),
    notDueAt: undefined,
    heldUntil,
    truncated: 'pages',
    ...(after !== undefined && { resumeAfter: after }),
  };
}

/**
 * Entries of limited jobs that a read kept, waiting for permits (due-index.ts): the next read
 * passes over those and every later key of their jobs (they would wait behind them), but not an
 * entry of such a job at an earlier key that the keeping read did not return — one that came
 * since (a catch-up replay's claim moved its schedule's entry to the next missed fire time, or a
 * backfill), older than what waits. Passed over with the rest, a chain's next step was read only
 * once the kept entries went stale (two polls and a second): on a fleet whose every node kept
 * some of the job's entries, one replay every 2-3 s for runs of 50-300 ms, and a schedule every
 * 2 s never caught up (simulator, `lim,rl,mc,pages`, sim faults, seed 31;
 * test/simulate-limited-chains.test.ts).
 */
export class WaitingEntries {
  private readonly newest = new Map<string, string>();
  private readonly keys = new Set<string>();

  constructor(entries: readonly { key: string; schedule: { job: string } }[]) {
    for (const e of entries) {
      this.keys.add(e.key);
      const newest = this.newest.get(e.schedule.job);
      if (newest === undefined || e.key > newest) this.newest.set(e.schedule.job, e.key);
    }
  }

  /** Whether entries of `job` wait. */
  has(job: string): boolean {
    return this.newest.has(job);
  }

  /**
   * Whether the read passes over this due entry of `job`. Keys compare as JS strings (UTF-16
   * units), the store's scan by code points: they differ only for astral characters in two ids
   * at one instant, and then an entry is read (it waits) or passed over (as before) — never lost.
   */
  passesOver(job: string, key: string): boolean {
    const newest = this.newest.get(job);
    return newest !== undefined && (key >= newest || this.keys.has(key));
  }
}

/**
 * The size of the next page of a read: PAGE, or — when the rows read so far are spread over time
 * and reach into the last read-ahead before `horizon` (jittered entries coming due one by one) —
 * about as many as reach `horizon` at the density seen, with a margin: a read of a few hundred
 * entries ahead does not fetch a thousand rows to keep them. Too few is one more page. Entries
 * further back (a backlog, entries passed over) are read a full page at a time, as before: a
 * page sized by a sparse stretch of them cost reads a few more calls each.
 */
function pageSize(
  rows: number,
  firstAt: number | undefined,
  lastAt: number | undefined,
  horizon: number,
): number {
  if (firstAt === undefined || lastAt === undefined || lastAt <= firstAt) return PAGE;
  if (lastAt < horizon - 2 * READ_AHEAD_MS) return PAGE;
  const more = (rows * (horizon - lastAt)) / (lastAt - firstAt);
  return Math.max(FIRST_PAGE, Math.min(PAGE, Math.ceil(more * 1.25) + 16));
}

/**
 * How many rows the next page of a read needs to find the `missing` entries it still wants, at the
 * share of rows read so far that it kept (`kept` of `rows`; at least 1/16 — a read meeting mostly
 * other nodes' entries reads pages of PAGE), with a margin; never under FIRST_PAGE. A read stops
 * at the entry that fills its want and the rest of its page is thrown away: with pages of PAGE
 * for a want of a few hundred free slots, a fan-out of 100,000 on one node read 4.2 rows per
 * occurrence (417,000 rows), and every row costs both the server and the node.
 */
function rowsWanted(missing: number, kept: number, rows: number): number {
  const share = Math.max(kept / rows, 1 / 16);
  return Math.max(FIRST_PAGE, Math.ceil((missing / share) * 1.25) + 16);
}

/**
 * A misfire replay this node won (`c`) of a `catch-up` schedule moves the schedule's entry to a
 * fire time missed too: the chain's next step. This node's reads take it as their own — at once,
 * whichever node its fire time prefers — until it would count as stalled anyway
 * ({@link stalledAfter}). A chain runs one step at a time (each replay's claim moves the entry to
 * the next), so spreading its steps gains nothing; and a step preferred by a node that had died
 * but still counted live (its heartbeat, ~11 s) waited for the stall count at every step — a
 * replay every ~4 s for a schedule every 2 s, its last fire times unrun at the end (simulator,
 * `pages,rep,rl,ps,cu,shp,mc`, sim faults, seed 123: `cu/cu1`).
 */
export function noteChainStep(s: NodeState, c: Candidate): void {
  const spec = s.defined.get(c.occ.job)?.spec;
  if (c.source !== 'misfire' || spec?.misfire !== 'catch-up') return;
  // Its move: the put of the advance (due-entry.ts; a catch-up job is not claimed in pages).
  const put = c.advance?.find((op) => op.op === 'put' && op.key.startsWith(keys.duePrefix));
  if (put?.op !== 'put') return;
  const to = put.key;
  // A step only when that fire time is missed too. (A run-once replay's next fire time is often
  // late as well: taken here as this node's own, mix5's other jobs lost fire times in 16 seeds of
  // 1-400 instead of 4 — each node took more of the paged schedules' work ahead of them.)
  const now = s.storeClock.estimate();
  if (parseDueEntry(to).at >= now - spec.misfireThresholdMs) return;
  s.chainSteps.hold(to, now + stalledAfter(s.pollMs), now);
}

/**
 * This node's own due entries, then — with the slots they leave — entries past their grace that
 * other live nodes go first for, taken from the far end of what was read: their preferred nodes
 * work through them from the near end (key order), so a node that ran out of its own work helps
 * with the others' without claiming the same entries they are claiming at the same moment. What
 * is not taken is read again later (the preferred node has usually run it by then).
 */
function steal(own: StoredRecord[], others: StoredRecord[], want: number): StoredRecord[] {
  const room = want - own.length;
  if (room <= 0 || others.length === 0) return own;
  return [...own, ...others.slice(-room)];
}

/**
 * Entries past their grace that another live node goes first for, and since when this node's
 * reads have met them (store time of the first read that did): one its preferred node leaves
 * lying for {@link stalledAfter} is taken as this node's own, oldest first, in key order with
 * them. A live node that cannot get to its share — stuck on store calls that lost their answers,
 * or without free slots for long — held its entries back for as long as it lived: the others took
 * them only with the slots their own shares left, from the far end (simulator, four nodes, lost
 * replies and crashes, seed 22: pages/p10@+2 s lay free for 5.5 s; seed 102: pages/p2@+3 s for
 * 14 s, while every other node had a catch-up backlog of its own). Kept per node (due-index.ts),
 * renewed by every read: only the entries the last read met.
 */
export class Stalls {
  /**
   * Per entry met past its grace: the store time of the first read that met it, and the last read
   * (`readNo`) that did. Kept in place, not copied per read: during a fan-out on four nodes each
   * node's reads meet tens of thousands of the others' entries, and a map rebuilt at every read
   * (the whole of it carried over entry by entry) cost each node 100-200 ms of CPU per 25,000
   * occurrences it ran (bench:scale --quick, four nodes; 43-60 ms now).
   */
  private readonly since = new Map<string, { first: number; readNo: number }>();
  /** The read going on (or the last one). */
  private readNo = 0;
  /** Entries the read going on met first: forgotten again if it fails on the way. */
  private added: string[] = [];
  private open = false;

  /** The read going on meets `key` past its grace: whether its preferred node has left it lying. */
  met(key: string, now: number, pollMs: number): boolean {
    let m = this.since.get(key);
    if (m === undefined) {
      m = { first: now, readNo: this.readNo };
      this.since.set(key, m);
      this.added.push(key);
    } else m.readNo = this.readNo;
    return m.first <= now - stalledAfter(pollMs);
  }

  /** A read begins (one that failed on the way leaves what it met unused). */
  readStart(): void {
    if (this.open) for (const key of this.added) this.since.delete(key);
    this.added = [];
    this.open = true;
    this.readNo++;
  }

  /**
   * The read is over: an entry it looked for and did not meet (taken, moved on) is forgotten. It
   * looked only at keys after `from` (a read resumed after the last one's cursor) up to `to` (a
   * read that stopped for want of slots or after its pages), both undefined for the whole index:
   * an entry met before outside that stretch keeps its time. Forgotten by such a read, an entry
   * lying at a stuck node was met afresh every few reads and never counted as stalled (simulator,
   * `pages,rep,rl,ps,cu,shp,mc`, sim faults, seed 301: `mc/mc0@+4 s`, met by another node from
   * 5.4 s, forgotten at 8.7 s by a read that resumed past it, 3 s needed; its node stuck on lost
   * replies until 12 s, the schedule's chain never caught up).
   */
  readDone(from?: string, to?: string): void {
    // forEach, not for…of: no [key, value] array per entry (a fan-out's reads walk ~30,000 each).
    // Deleting the entry an iteration stands on is allowed: it goes on with the next.
    this.since.forEach((m, key) => {
      if (m.readNo !== this.readNo && (from === undefined || key > from) && (to === undefined || key <= to))
        this.since.delete(key);
    });
    this.added = [];
    this.open = false;
  }
}

/**
 * How long an entry past its grace is met lying at another live node before this node takes it
 * as its own: two of this node's polls and a second — a working preferred node takes its oldest
 * entries at its next tick, so one still there after that is not being worked on.
 */
export function stalledAfter(pollMs: number): number {
  return 2 * pollMs + 1_000;
}

const JOB_FIELD = '{"job":"';

/**
 * The job a due entry's value names (`{"job":…}`: every writer puts it first). Read by slicing
 * when the name needs no JSON escape, which is what a scan of a fan-out meets on every row
 * (parsing each value was half of this scan's own CPU); parsed otherwise.
 */
export function jobOfDueValue(value: string): string {
  if (value.startsWith(JOB_FIELD)) {
    const end = value.indexOf('"', JOB_FIELD.length);
    if (end > 0) {
      const job = value.slice(JOB_FIELD.length, end);
      if (!job.includes('\\')) return job;
    }
  }
  return (JSON.parse(value) as { job: string }).job;
}
