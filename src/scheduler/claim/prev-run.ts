import { SPREAD_GRACE_MS } from '../control/spread.js';
import { latestPerRun, runHistoryKeys } from '../finish/history.js';
import { type Candidate, type Job, startOf } from '../internal-types.js';
import { keys } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { calledBy, decodeInvoked } from '../run/invoked-mark.js';
import type { SkipCause } from '../types.js';
import { FINAL_STATUSES } from './dead-attempt.js';
import { decodePageRecord, itemOcc, type PageRecord, pageKeys } from './page-record.js';

/** What becomes of a fire time whose schedule's previous fire time was run by a page. */
export type PrevVerdict =
  | { kind: 'claim' }
  | { kind: 'wait' }
  | { kind: 'skip'; by: SkipCause }
  | { kind: 'missed' };

/**
 * Overlap per stored schedule for pages (overlap `skip`; see the end for `allow`): a due entry
 * moved by a page names that page and the fire time it ran (`prev`, page-record.ts). While the
 * page's record exists, that run may be going. Judged from the outside, as invariant 7 asks — by runs that started:
 *  - the page won the previous fire time, its holder's mark (run/invoked-mark.ts) shows that
 *    run's handler called at or before this fire time, its lease still holds, and the run has no
 *    final outcome on record: skipped, naming that run — or, when the page is a recovery that
 *    started after this fire time, the run that died, marked as called by then (its abandoned
 *    entry ends when the recovery started: it was going at this fire time);
 *  - the page has not started (its claim's reply on the way, its node frozen), its start is on
 *    record but no mark shows the run's handler called by this fire time (the start's answer lost
 *    or late, its node frozen before the call: the record alone is a promise, not a run), its
 *    lease lapsed or is held by a takeover that has not written its start, the run was given up
 *    by its node (`abandoned`: recovery will run it), the run is a misfire replay (on-time work queues behind a replay),
 *    or it started after this fire time: this fire time waits and is judged again at a later read;
 *  - the run ended on record while a takeover holds the page and has not written its start (it
 *    may have read the history before that end was stored, and will run the fire time again):
 *    this fire time waits;
 *  - the run ended (on record, or the page's record is gone), and this fire time would start past
 *    the misfire threshold (and a grace): it was held back by that page and is now simply late —
 *    `missed`: it is planned again as behind no page in flight, by the misfire policy
 *    (Candidate.replanLate, due-entry.ts). Claimed as on time instead, every fire time of a
 *    schedule every second behind a page recovered 4 s late ran one by one, each behind the one
 *    before and each ~1.2 s apart, the schedule falling further behind to the end (simulator,
 *    `lim,rl,mc,pages`, sim faults, seed 2: pages/p15; test/simulate-late-behind-page.test.ts);
 *  - anything else (no record, the run ended in time, the page did not win it): claimed.
 * Under overlap `allow` only the second rule's first case holds a fire time back: a page that has
 * not started. Were this fire time claimed meanwhile, its move would carry the entry on past the
 * key the unstarted page moved it to, and a recovery of that page — which learns the items it won
 * from the entries naming it there (page-recovery.ts `claimedBy`) — would not find it: the earlier
 * fire time would be lost, neither run nor on record.
 * Under both, an entry moved by a page whose item for the fire time before was a skip or only
 * settled the move (`mover`) waits while that page has not started, for the same reason.
 * Reads: one getMany of the distinct pages named; then, only for entries whose page is in flight,
 * one look at the store's clock, one getMany of the runs' history entries and their holders'
 * marks, and one inspect per page still holding a going run or an ended one.
 */
export async function judgePrev(
  state: NodeState,
  job: Job,
  cs: readonly Candidate[],
): Promise<PrevVerdict[]> {
  const verdicts: PrevVerdict[] = cs.map(() => ({ kind: 'claim' }));
  const name = job.spec.name;
  const named = [
    ...new Set(
      cs.flatMap((c) => [
        ...(c.pageMove?.prev ? [c.pageMove.prev.page] : []),
        ...(c.pageMove?.mover !== undefined ? [c.pageMove.mover] : []),
      ]),
    ),
  ];
  if (named.length === 0) return verdicts;
  // Late: starting now, it would start past the misfire threshold (due-entry.ts judges lateness
  // alike, by the node's estimate of the store's time; here with the longest grace, so that what
  // is late here is late there too). Only a fire time planned with its replan (`replanLate`).
  const late =
    state.storeClock.estimate() - job.spec.misfireThresholdMs - state.spread.graceFor(name, SPREAD_GRACE_MS);
  const missed = (c: Candidate) => c.replanLate !== undefined && startOf(c) < late;
  const values = await state.store.getMany(named.map((p) => pageKeys(name, p).record));
  const records = new Map<string, PageRecord>();
  named.forEach((p, i) => {
    const v = values[i];
    if (v !== null && v !== undefined) records.set(p, decodePageRecord(v));
  });
  // The runs to look at: a won `run` item of a started page.
  const looks: { i: number; page: string; rec: PageRecord; item: number }[] = [];
  cs.forEach((c, i) => {
    // The page that moved this entry (a skip or settle item of it) has not started: wait for it.
    const mover = c.pageMove?.mover === undefined ? undefined : records.get(c.pageMove.mover);
    if (mover && !mover.started) {
      verdicts[i] = { kind: 'wait' };
      return;
    }
    const prev = c.pageMove?.prev;
    const rec = prev && records.get(prev.page);
    if (!prev || !rec) {
      // Its page's record gone since the read: every run of that page has ended.
      if (prev && missed(c)) verdicts[i] = { kind: 'missed' };
      return;
    }
    if (!rec.started) {
      verdicts[i] = { kind: 'wait' };
      return;
    }
    if (job.spec.overlap !== 'skip') return;
    const item = rec.items.findIndex((it) => it.id === c.occ.scheduleId && it.fireTime === prev.fireTime);
    if (item < 0 || !rec.started.won.includes(item) || rec.items[item]!.kind !== 'run') return;
    looks.push({ i, page: prev.page, rec, item });
  });
  if (looks.length === 0) return verdicts;
  // The reads below must be taken at or after the fire times they judge: a run that ends between
  // a read taken early and F was not going at F (this node's estimate of the store's time can run
  // ahead of it by the estimate's error and its clock's drift since). One look at the store's own
  // clock first; a fire time still ahead of it waits and is judged again at a later read.
  const readFrom = await state.store.now();
  // With the runs' history entries, in the same read, the marks of the holders whose runs may be
  // named: the page's current holder and, a recovery, its first (run/invoked-mark.ts).
  const markKeys = [
    ...new Set(
      looks.flatMap(({ page, rec }) => {
        const lease = pageKeys(name, page).lease;
        const since = rec.started!.since;
        return [
          keys.invoked(lease, rec.started!.token),
          ...(since ? [keys.invoked(lease, since.token)] : []),
        ];
      }),
    ),
  ];
  // Each run's history from its page's attempt on, through its retries: a run whose first
  // attempt failed and whose retry succeeded has ended. Read at its page's attempt only, the
  // failure (`willRetry`) made a run that had ended seconds before this fire time look going, and
  // the fire time was skipped naming it (simulator, a rate-limited job with retries, sim faults,
  // seeds 27, 95, 112 of 120: the page's finish cut off by a partition, its record left).
  const retries = job.spec.retries;
  const historyKeys = looks.flatMap(({ rec, item }) => {
    const it = rec.items[item]!;
    return runHistoryKeys(itemOcc(name, it), it.attempt ?? 1, retries);
  });
  const read = await state.store.getMany([...historyKeys, ...markKeys]);
  const histories = latestPerRun(historyKeys, read.slice(0, historyKeys.length), retries);
  const marks = new Map(markKeys.map((k, i) => [k, decodeInvoked(read[historyKeys.length + i])]));
  /** The token holding each page's lease now (`undefined`: free): one inspect per page. */
  const holders = new Map<string, number | undefined>();
  const holder = async (page: string) => {
    if (!holders.has(page)) holders.set(page, (await state.store.inspect(pageKeys(name, page).lease))?.token);
    return holders.get(page);
  };
  for (const [n, look] of looks.entries()) {
    const e = histories[n];
    if (e !== null && e !== undefined) {
      // Ended — unless a takeover holds the page and has not written its start yet: it may have
      // read the history before this end was stored (a run that finished cut off from the store,
      // stored after its lease lapsed) and run the fire time again, after this one started
      // (simulator, partitions and lost requests, seed 43 of jit,sh,shs,pq: jit/j12@+2 s's
      // recovery started 0.35 s after +4 s's run). Waits for that start; judged again then.
      // A skip under another token is no end of this run: written beside it by a node that found
      // the schedule's old entry stale (due/removed-due.ts) while a page of the old version,
      // claimed after the upsert from an earlier read, ran the fire time (simulator, schedules
      // re-upserted every few seconds, seed 17: the new version's first fire time started while
      // that run went). The run's own outcome replaces it when stored.
      const foreign = e.status === 'skipped' && e.token !== look.rec.started!.token;
      // (A failed attempt followed by a retry is no end, nor an abandoned one: its page is
      // recovered and runs it again.)
      if (FINAL_STATUSES.has(e.status) && e.willRetry !== true && !foreign) {
        const by = await holder(look.page);
        if (by !== undefined && by !== look.rec.started!.token) verdicts[look.i] = { kind: 'wait' };
        else if (missed(cs[look.i]!)) verdicts[look.i] = { kind: 'missed' };
        continue;
      }
      // Given up by its node (its page's lease lost): not going, and not yet run again — this
      // fire time waits for the recovery, whose start then names the run (`since`).
      if (e.status === 'abandoned') {
        verdicts[look.i] = { kind: 'wait' };
        continue;
      }
    }
    const c = cs[look.i]!;
    const F = c.occ.fireTime;
    if (F > readFrom) {
      verdicts[look.i] = { kind: 'wait' };
      continue;
    }
    const it = look.rec.items[look.item]!;
    const started = look.rec.started!;
    // Held by the holder that wrote this start: a takeover that holds the lease and has not
    // written its own start yet (its node died or lost a reply on the way) is no run going.
    const live = (await holder(look.page)) === started.token;
    // The run that overlapped F: the page's current run if its handler had been called by F (its
    // holder's mark says so: the start record alone is a promise — its node may have lost the
    // answer, or frozen, before calling it); else, when the page is a recovery, the run that
    // died, marked as called by F — on record as going until the recovery started (its abandoned
    // entry ends then), so it covers an F between its start and that. Neither: it waits, and is
    // judged again at a later read (a run not marked yet; one that ends meanwhile frees it).
    const lease = pageKeys(name, look.page).lease;
    const since = started.since;
    const current = { node: look.rec.node, token: started.token };
    const by = calledBy(
      marks.get(keys.invoked(lease, started.token)),
      Math.max(started.at, it.at ?? started.at),
      F,
      look.item,
    )
      ? current
      : since &&
          calledBy(
            marks.get(keys.invoked(lease, since.token)),
            Math.max(since.at, it.at ?? since.at),
            F,
            look.item,
          )
        ? since
        : undefined;
    verdicts[look.i] =
      it.source === 'misfire' || !live || by === undefined
        ? { kind: 'wait' }
        : { kind: 'skip', by: { fireTime: new Date(it.fireTime), node: by.node, token: by.token } };
  }
  return verdicts;
}
