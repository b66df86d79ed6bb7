import { boundedBy } from '../../schedule/bounds.js';
import { type CompiledExclude, compileExclude, cronZone } from '../../schedule/exclude.js';
import { type CompiledJitter, compileJitter } from '../../schedule/jitter.js';
import { compileShared } from '../../schedule/shared-triggers.js';
import type { CompiledTrigger } from '../../schedule/trigger.js';
import type { StoredRecord, WriteOp } from '../../store/types.js';
import { MAX_BATCH } from '../../store/validate.js';
import { decodeDueValue } from '../claim/page-record.js';
import type { StoredScheduleRecord } from '../control/schedule-input.js';
import { keys, parseDueEntry } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { carryOver, MAX_CARRIED } from './carry-over.js';
import { claimableAhead, type DueEntry } from './due-entry.js';
import { Stalls, scanDue, stalledAfter, WaitingEntries } from './due-scan.js';
import { waitForSlots } from './entry-peek.js';
import { ExpectedMoves } from './expected-moves.js';
import { pendingOf } from './pending-shards.js';
import { ReadCursor } from './read-cursor.js';
import { removedDue } from './removed-due.js';

/** The due index is read at least this often, whatever else happens (a safety net). */
const SAFETY_MS = 10_000;
/** Reads of the due index follow one another at least this far apart (see `refresh`). */
const READ_GAP_MS = 100;
/** Moves further ahead than this are not expected (see `offeredInFull`): six safety reads come first. */
const EXPECT_HORIZON_MS = 6 * SAFETY_MS;

/**
 * The due index (`due|<fireTime>|<id>|<v>`, see keys.ts) as this node reads it: instead of every
 * stored schedule at every poll, only the entries that are due, and only when something may have
 * changed — the change signal (`ctl|srev`, read by every poll anyway) moved, the next due time
 * known from the last read has come, a fire time the node expects an entry for, a pause lifted,
 * or every {@link SAFETY_MS} as a safety net. An idle node with a million stored schedules reads
 * one page of 64 keys every ten seconds.
 *
 * A read: pages of `due|` ascending while entries are due, then one `getMany` of their schedules
 * (`sch|<id>`). An entry whose schedule is gone or whose `v` is not the schedule's is stale: it is
 * deleted, never run (a re-upsert or remove made it so; the move written by a run that read the
 * schedule just before can only re-create a stale entry). The others become claims (due.ts).
 */
export class DueIndex {
  /** Fresh due entries read, oldest first, less those offered in full since (`offeredNow`). */
  private entries: DueEntry[] = [];
  /**
   * Entries offered in full since `entries` was last compacted: dropped in one pass when `ready` is
   * next read (a tick offers up to a thousand; removing each with indexOf + splice was quadratic).
   */
  private readonly offeredNow = new Set<DueEntry>();
  private revision: string | undefined;
  private pausedSeen = '';
  private definedSeen = -1;
  /** The next store time at which a read is needed anyway (the next entry, the safety net). */
  private nextReadAt = 0;
  /**
   * Where the next read begins (read-cursor.ts): at the first key at least as often as an entry
   * of another node's is left lying before this node takes it (due-scan.ts `stalledAfter`).
   */
  private readonly cursor: ReadCursor;
  /** Entries this node offered, by key: met again, they are held elsewhere — read less often. */
  private offered = new Set<string>();
  private retryMs: number;
  /** Fire times this node expects an entry at (a move it saw being planned), by schedule id. */
  readonly expected = new ExpectedMoves();
  /**
   * The calendars the exclusions of the entries read name (the due stage makes sure they are held
   * before it plans an entry): grows with the reads, reset when it passes a thousand.
   */
  readonly calendars = new Set<string>();
  /** Entries other live nodes go first for, since when this node's reads met them (due-scan.ts). */
  private readonly stalls = new Stalls();
  /**
   * The limited jobs whose entries the last read passed over, their entries read before still
   * waiting for permits (`skipJobs` in `refresh`), and when that read was (store time): once one
   * of them has no entry left waiting, the next read is owed now (see `passedOverFreed`).
   */
  private passedOver: { jobs: ReadonlySet<string>; readAt: number } | undefined;
  /** Schedules whose trigger did not compile here, by `id|v`: reported once. */
  private readonly bad = new Set<string>();

  constructor(private readonly state: NodeState) {
    this.retryMs = state.pollMs;
    this.cursor = new ReadCursor(stalledAfter(state.pollMs));
  }

  /**
   * When the loop must tick again for the due index (store time). Never while entries read are
   * still to be offered: no read is made then (`refresh`), and those entries have wake-ups of
   * their own (a grace ending, slots freed). A read owed meanwhile, its time passed, made the
   * loop spin — sleeping 0 ms, reading nothing — until they were taken (the simulator's `stuck`,
   * sharded stored schedules whose shard waits for another node's grace).
   */
  wakeAt(): number {
    if (this.waitingForSlots()) return Number.POSITIVE_INFINITY;
    let at = Math.min(this.nextReadAt, this.state.dueWakeAt);
    if (this.passedOver !== undefined && this.passedOverFreed())
      at = Math.min(at, this.passedOver.readAt + READ_GAP_MS);
    // A paused schedule's expected move will not come (schedule-pause.ts): no read for it.
    return Math.min(at, this.expected.earliest(this.state.pausedSchedules));
  }

  /** The entry's job has fleet limits (run/fleet-limits.ts): what it waits for is permits. */
  private limited(e: DueEntry): boolean {
    const job = this.state.defined.get(e.schedule.job);
    return job !== undefined && this.state.limits.limited(job.spec);
  }

  /** Whether the last due tick ran out of slots with work left (due.ts `backlog`). */
  slotsShort = false;

  /** Entries read wait for this node's slots or another node's grace: no read now (entry-peek.ts). */
  private waitingForSlots(): boolean {
    return waitForSlots(this.state, this.ready, this.slotsShort);
  }

  /**
   * Whether a job whose entries the last read passed over has no entry left waiting here: its
   * permits came and what waited was claimed, so the entries passed over are next. Nothing else
   * owes that read (they were due already, not ahead): before, they waited for the safety read,
   * and a limited job's backlog moved for ~2.5 s out of every 10 (test/limits-multiprocess.test.ts:
   * 10,000 due under 2,000 starts a second took 54 s, granted in bursts ten seconds apart; the
   * `maxConcurrency` job beside it the same; test/simulate-limited-backlog-reads.test.ts).
   */
  private passedOverFreed(): boolean {
    const left = new Set(this.passedOver!.jobs);
    for (const e of this.ready) {
      left.delete(e.schedule.job);
      if (left.size === 0) return false;
    }
    return true;
  }

  /** Fresh due entries read and not yet offered in full (no free slot yet), oldest first. */
  get ready(): readonly DueEntry[] {
    if (this.offeredNow.size > 0) {
      this.entries = this.entries.filter((e) => !this.offeredNow.has(e));
      this.offeredNow.clear();
    }
    return this.entries;
  }

  /** Reads the due index if anything may have changed (see the class comment); fills `ready`. */
  async refresh(now: number): Promise<void> {
    const s = this.state;
    const paused = [...s.paused].sort().join('\u0000');
    const changed =
      s.scheduleRevision !== this.revision ||
      paused !== this.pausedSeen ||
      s.defined.size !== this.definedSeen;
    if (!changed && (this.waitingForSlots() || now < this.wakeAt())) return;
    if (s.freeSlots() <= 0) return;
    const resumeAfter = this.cursor.begin(now, changed);
    this.revision = s.scheduleRevision;
    this.pausedSeen = paused;
    this.definedSeen = s.defined.size;
    s.dueWakeAt = Number.POSITIVE_INFINITY;
    // A sharded job's entries (the others' one candidate carries the move: gone from the index, it
    // was claimed), not a paused job's or schedule's, nor a job's no longer defined here.
    const live = (e: DueEntry) => !s.paused.has(e.schedule.job) && !s.pausedSchedules.has(e.schedule.id);
    const planned = this.ready.filter(
      (e) =>
        e.plan !== undefined &&
        e.plan.length > 0 &&
        (s.defined.get(e.schedule.job)?.spec.shards?.count ?? 1) > 1 &&
        live(e),
    );
    // A limited job's entries waiting for permits (see waitingForSlots) stay as they are, and the
    // read passes over that job's other entries: they would wait behind these, and read again
    // they would fill the read before the entries of other jobs that can run now. Only for a
    // while: another node may have moved them on meanwhile, and the job's entries moved since
    // are read by nobody else while this node lives (its share, due-scan.ts) — a node whose
    // fleet permits went to the others kept two such entries for 14 s, and a schedule of its
    // share lost every fire time after +4 s (simulator, busy faults, maxConcurrency 3, seed 55).
    // A job with an entry held that long is read afresh, all of its entries. An entry that came
    // since at an older key (a catch-up chain's next step) is read all the same (WaitingEntries).
    const stale = new Set<string>();
    const keptSince = now - stalledAfter(s.pollMs);
    for (const e of this.ready) if (e.readAt <= keptSince && this.limited(e)) stale.add(e.schedule.job);
    const waiting = this.ready
      .filter((e) => this.limited(e) && live(e) && !stale.has(e.schedule.job))
      .slice(0, MAX_CARRIED);
    const skipJobs = new WaitingEntries(waiting);
    this.entries = [];
    this.offeredNow.clear();
    const scan = await scanDue(s, now, s.freeSlots(), resumeAfter, skipJobs, this.stalls);
    const { due, notDueAt, heldUntil, truncated } = scan;
    this.passedOver = scan.passedOver && { jobs: scan.passedOver, readAt: now };
    this.cursor.stoppedAt(scan.resumeAfter);
    const entries = await this.fresh(due, now);
    const seen = new Set(entries.map((e) => e.schedule.id));
    // Read ahead of its start but not to be claimed ahead (its previous fire time's page still in
    // flight, a job with fleet limits): not held — held entries would keep the next read waiting
    // (`wakeAt`) — but read again at its start, from the first key.
    let notAhead: number | undefined;
    const fresh = entries.filter((e) => {
      if (e.at <= now || claimableAhead(s, e)) return true;
      notAhead = Math.min(notAhead ?? Number.POSITIVE_INFINITY, e.at);
      return false;
    });
    if (notAhead !== undefined) this.cursor.drop();
    const metAgain = fresh.some((e) => this.offered.has(e.key));
    this.offered = new Set(fresh.map((e) => e.key));
    this.entries = carryOver(planned, waiting, fresh);
    // Held elsewhere (claimed, not started yet): look again, less often each time.
    this.retryMs = metAgain ? Math.min(SAFETY_MS, this.retryMs * 2) : s.pollMs;
    let next = Math.min(
      notDueAt ?? Number.POSITIVE_INFINITY,
      heldUntil ?? Number.POSITIVE_INFINITY,
      now + SAFETY_MS,
    );
    if (notAhead !== undefined) next = Math.min(next, notAhead);
    if (metAgain) next = Math.min(next, now + this.retryMs);
    // Stopped for want of slots: go on (after the last key read) as soon as slots are free; stopped
    // after MAX_PAGES of entries passed over: at the next poll.
    if (truncated === 'pages') next = Math.min(next, now + s.pollMs);
    // Entries that come due one by one (jitter spreads a fleet's 09:00 over minutes) are read
    // together, READ_GAP_MS at a time, not each by a read, a page claim and a finish of its own:
    // 100,000 spread over 5 minutes on 4 nodes cost 6.3 store calls and 1.7 ms of node CPU per
    // occurrence, against 0.02 and 0.12 ms when due at once (bench:scale --variant jitter). An
    // entry starts at most that much later; the misfire threshold (1 s by default) is far off.
    next = Math.max(next, now + READ_GAP_MS);
    if (truncated === 'full') next = now;
    this.nextReadAt = next;
    this.expected.sweep(seen, now, s.pollMs);
  }

  /**
   * The entry was offered in full: expect its next entry at the time it moves on to, if that is
   * within {@link EXPECT_HORIZON_MS}. The expectation covers a read that ran before the move was
   * written (the next read would otherwise wait for the safety net); a move further ahead is met
   * by several safety reads (or a scan that stops at it as the first entry not due) before it is
   * due. Keeping one per run grew this map by every schedule the node ran in a day — with a
   * million daily per-user schedules a million entries, all walked by every wakeAt().
   */
  offeredInFull(e: DueEntry): void {
    this.offeredNow.add(e);
    // The entry's key (and so the scan's order) is the next occurrence's start: fire time + jitter.
    const at = e.nextAt ?? e.next;
    if (at !== undefined && at <= e.readAt + EXPECT_HORIZON_MS) this.expected.expect(e.schedule.id, at);
    if (at !== undefined) this.cursor.movedTo(at);
  }

  /** The due entries whose schedule is current (one `getMany` per 1,000); stale ones deleted. */
  private async fresh(due: StoredRecord[], readAt: number): Promise<DueEntry[]> {
    const s = this.state;
    const parsed = due.map((r) => {
      const e = parseDueEntry(r.key);
      return { key: r.key, id: e.id, v: e.v, fireTime: e.fireTime, at: e.at };
    });
    const chunks: (typeof parsed)[] = [];
    for (let i = 0; i < parsed.length; i += MAX_BATCH) chunks.push(parsed.slice(i, i + MAX_BATCH));
    const values = (
      await Promise.all(chunks.map((c) => s.store.getMany(c.map((p) => keys.schedule(p.id)))))
    ).flat();
    const out: DueEntry[] = [];
    const stale: StoredRecord[] = [];
    if (this.calendars.size > 1_000) this.calendars.clear();
    parsed.forEach((p, i) => {
      const value = values[i] ?? null;
      const schedule = value === null ? undefined : (JSON.parse(value) as StoredScheduleRecord);
      // (Built only when some schedule failed to compile: most reads have none.)
      if (!schedule || schedule.v !== p.v || (this.bad.size > 0 && this.bad.has(`${p.id}|${p.v}`))) {
        stale.push(due[i]!);
        return;
      }
      const j = schedule.jitter;
      const x = schedule.exclude;
      let trigger: CompiledTrigger;
      let jitter: CompiledJitter | undefined;
      let exclude: CompiledExclude | undefined;
      // What an error names: built only for one (a read of 20,000 entries built it 40,000 times).
      const what = () => `schedule ${JSON.stringify(p.id)}`;
      try {
        trigger = compileShared(schedule, what);
        jitter = j === undefined ? undefined : compileJitter(j, undefined, what());
        // Only for a schedule with exclusions (most have none: nothing to compile or check).
        if (x !== undefined) {
          exclude = compileExclude(x, cronZone(trigger), what());
          for (const id of exclude?.calendars ?? []) this.calendars.add(id);
        }
        // startAt/endAt (schedule/bounds.ts): no fire time outside them; the entry moves within.
        if (schedule.startAt !== undefined || schedule.endAt !== undefined)
          trigger = boundedBy(trigger, schedule, what());
      } catch (err) {
        // Written around upsert's validation: reported once, its entry dropped.
        this.bad.add(`${p.id}|${p.v}`);
        s.emit('error', { error: err, during: `schedule ${p.id}` });
        stale.push(due[i]!);
        return;
      }
      // Moved here by a page: the run it names (`prev`), and the page that moved it when another
      // (a skip or settle item's: the entry waits while it has not started). By a sharded job's
      // shard 0 (`pending`): the fire time whose other shards are offered again. By a pause span's
      // settle (`spanned`, control/pause-span.ts). With maxRuns (`left`, control/runs-left.ts): the
      // runs left. Written by an upsert that replaced the schedule: `replacedAt` (claim/replaced-prev.ts).
      const raw = due[i]!.value;
      const moved = raw.length > 2 && raw.charCodeAt(0) === 123 ? decodeDueValue(raw) : undefined;
      const entry: DueEntry = { key: p.key, fireTime: p.fireTime, at: p.at, schedule, trigger, readAt };
      if (jitter) entry.jitter = jitter;
      if (exclude) entry.exclude = exclude;
      if (moved !== undefined) {
        if (moved.prev) entry.prev = moved.prev;
        if (moved.page !== undefined && moved.page !== moved.prev?.page) entry.movedBy = moved.page;
        const pending = pendingOf(moved);
        if (pending !== undefined) entry.pending = pending;
        if (moved.spanned === true) entry.spanned = true;
        if (moved.left !== undefined) entry.left = moved.left;
        if (moved.replacedAt !== undefined) entry.replacedAt = moved.replacedAt;
      }
      out.push(entry);
    });
    await this.markLivePrev(out);
    // A stale entry whose start had come: its fire times are recorded `removed` with its delete.
    const { skips, rest: deletes } = await removedDue(s, stale, await this.deletable(stale), readAt);
    for (const { writes, event } of skips)
      void s.writes.submit(writes).then(
        () => s.emit('skipped', event),
        (err) => s.emit('error', { error: err, during: 'due index cleanup' }),
      );
    for (let i = 0; i < deletes.length; i += MAX_BATCH) {
      // Blind deletes of entries that can never be current again: safe to lose, safe to repeat.
      void s.writes
        .submit(deletes.slice(i, i + MAX_BATCH))
        .catch((err) => s.emit('error', { error: err, during: 'due index cleanup' }));
    }
    return out;
  }

  /**
   * The deletes of stale entries: all but those moved there by a page still on record. Its
   * recovery finds the items its claim won by the entries that name it (page-recovery.ts,
   * `claimedBy`): deleted first, the fire time of a schedule removed after a claim that never
   * started would have no record at all (recovery records it skipped, `removed`). Such an entry is
   * read, and judged stale, again until the page is gone (one getMany per read that meets one).
   */
  private async deletable(stale: readonly StoredRecord[]): Promise<WriteOp[]> {
    const named: { key: string; record: string }[] = [];
    const deletes: WriteOp[] = [];
    for (const r of stale) {
      const moved = r.value.includes('"page"') ? decodeDueValue(r.value) : undefined;
      if (moved?.page === undefined) deletes.push({ op: 'delete', key: r.key });
      else named.push({ key: r.key, record: keys.pageRecord(moved.job, moved.page) });
    }
    for (let i = 0; i < named.length; i += MAX_BATCH) {
      const chunk = named.slice(i, i + MAX_BATCH);
      const values = await this.state.store.getMany(chunk.map((n) => n.record));
      chunk.forEach((n, k) => {
        if (values[k] === null || values[k] === undefined) deletes.push({ op: 'delete', key: n.key });
      });
    }
    return deletes;
  }

  /**
   * Marks the entries whose previous fire time's page, or the page that moved them, is still in
   * flight (its record exists): one getMany of the distinct pages named — in a fan-out, the few
   * pages that ran yesterday's.
   */
  private async markLivePrev(entries: DueEntry[]): Promise<void> {
    const named = new Map<string, { prev: DueEntry[]; moved: DueEntry[] }>();
    const name = (e: DueEntry, page: string) => {
      const key = keys.pageRecord(e.schedule.job, page);
      let lists = named.get(key);
      if (!lists) {
        lists = { prev: [], moved: [] };
        named.set(key, lists);
      }
      return lists;
    };
    for (const e of entries) {
      if (e.prev) name(e, e.prev.page).prev.push(e);
      if (e.movedBy !== undefined) name(e, e.movedBy).moved.push(e);
    }
    if (named.size === 0) return;
    const records = [...named.keys()];
    for (let i = 0; i < records.length; i += MAX_BATCH) {
      const chunk = records.slice(i, i + MAX_BATCH);
      const values = await this.state.store.getMany(chunk);
      chunk.forEach((key, n) => {
        if (values[n] === null || values[n] === undefined) return;
        const lists = named.get(key)!;
        for (const e of lists.prev) e.prevLive = true;
        for (const e of lists.moved) e.movedByLive = true;
      });
    }
  }
}
