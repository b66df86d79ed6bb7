import { getManyInSlices } from '../../store/get-many.js';
import type { Lease, Store, WriteOp } from '../../store/types.js';
import { decodeHistory } from '../finish/history.js';
import { settle } from '../finish/settle.js';
import type { Candidate, Job } from '../internal-types.js';
import { gateScope, keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import type { HistoryEntry } from '../types.js';
import { claimsInPages } from './eligible.js';
import { BACKFILL_SETTLE_MS, CONSUMED, pageRunGoing } from './gated-runs.js';
import { decodePageRecord } from './page-record.js';

/**
 * The claim side of a backfill (control/backfill.ts writes the requests, control/backfill-requests.ts
 * offers them): a backfill run holds the REAL occurrence's lease, so it excludes every other run of
 * that fire time and its fencing token is above theirs.
 *
 * "Has run" (or is going, so will have run): an attempt on record that is not `skipped` nor
 * `abandoned`, an in-flight record (running, or dead and left to recovery), or an item of a page
 * in flight (pages keep no in-flight record per occurrence). A fire time queued behind its overlap
 * gate (its pending record) has not run, and may never: its queue may record it skipped instead,
 * superseded by a later fire time queued behind the same gate (or found skipped by another node
 * meanwhile: then its record lingers, unrunnable, until its "done" hold ends). Counted as going, a
 * fire time superseded after the call was neither run nor backfilled (simulator, seeds 1 and 10 of
 * the backfill mix). So it is backfilled like any fire time not run: whichever claims the
 * occurrence first runs it — its queue (the backfill then finds it run), or the backfill, whose
 * start batch deletes the pending record with the request (the run it stood for is this one).
 */

/** History statuses that do not count as a run: the fire time was not run (or its run was cut off). */
const NOT_RUN: ReadonlySet<string> = new Set(['skipped', 'abandoned']);
/** Page records read per look-up at most (a job's pages in flight: far fewer in practice). */
const MAX_PAGES = 10_000;
/** Records read per occurrence by {@link lookUp}. */
const KEYS_PER_OCCURRENCE = 3;
/** How long a backfill claim waits for a page run of its schedule to end before it gives its claim back (at most a quarter lease). */
const MAX_PAGE_WAIT_MS = 1_000;
/** How often it looks meanwhile. */
const PAGE_WAIT_STEP_MS = 100;
/** Margin for the error of the store clock's estimate in {@link isHold}. */
const HOLD_MARGIN_MS = 5_000;

/**
 * How long a consumed request stays as a marker (its key, this value) before it expires: a
 * `backfill()` call that read "not run" before the run started, and creates its request after it,
 * finds the marker and creates nothing (put-if-absent), so a fire time is queued once however the
 * two calls interleave. A call slower than half of this reads again before it creates.
 */
export const CONSUMED_TTL_MS = 10 * 60_000;
/** The value of a consumed request's marker (kept in gated-runs.ts, which reads the markers too). */
export { CONSUMED };

/**
 * The write that consumes the backfill request of `occ` (in its run's start batch, as the
 * candidate's `startWrites`, or when it is found run): its key kept as a marker for CONSUMED_TTL_MS.
 */
export function consumeRequest(occ: OccurrenceId): WriteOp[] {
  return [{ op: 'put', key: keys.backfillRequest(occ), value: CONSUMED, ttlMs: CONSUMED_TTL_MS }];
}

/** Whether one attempt's entry counts as a run of its fire time. */
function isRun(e: HistoryEntry): boolean {
  return !NOT_RUN.has(e.status);
}

/**
 * The `run` items of `job`'s pages in flight, as `<scheduleId>\0<fireTime>`: `won`, those a
 * started page won (going, or dead and left to its recovery); `pending`, those of a page not
 * started yet, which it may or may not win. (Counting every item as run, one a page had lost —
 * its entry settled by another node's page at the resume of a pause — was never backfilled:
 * simulator, jittered schedules paused and backfilled, seed 20.)
 */
async function pageItems(store: Store, job: string): Promise<{ won: Set<string>; pending: Set<string> }> {
  const won = new Set<string>();
  const pending = new Set<string>();
  for (const r of await store.scan(keys.pageRecordPrefix(job), { limit: MAX_PAGES })) {
    try {
      const rec = decodePageRecord(r.value);
      rec.items.forEach((item, i) => {
        if (item.kind !== 'run') return;
        if (!rec.started) pending.add(`${item.id}\u0000${item.fireTime}`);
        else if (rec.started.won.includes(i)) won.add(`${item.id}\u0000${item.fireTime}`);
      });
    } catch {
      // Not a record this build wrote: nothing of it is read.
    }
  }
  return { won, pending };
}

/**
 * What the store holds of an occurrence a backfill is about: `ran` (it ran or is going, see the
 * file comment), `queued` (not run, and queued behind its overlap gate), `pending` (an item of a
 * page whose claim has not started: it may run, or not — `backfill()` queues it, a claim waits),
 * or nothing (not run).
 */
export type BackfillLook = 'ran' | 'queued' | 'pending' | undefined;

/**
 * Per occurrence (all of job `job`), what the store holds of it (see {@link BackfillLook}). Reads,
 * in this order (a run's finish deletes its in-flight record, or its page's, after or together
 * with its history): the job's page records (only when stored schedules are asked about), then
 * per occurrence its first attempt's history, in-flight and queued records in `getMany` batches,
 * and the whole history of an occurrence whose first attempt was not a run (a pause's one skipped
 * entry, a dead attempt recovered under the next number, a queued run superseded).
 */
export async function lookUp(
  store: Store,
  job: string,
  occs: readonly OccurrenceId[],
): Promise<BackfillLook[]> {
  const pages = occs.some((o) => o.scheduleId !== undefined)
    ? await pageItems(store, job)
    : { won: new Set<string>(), pending: new Set<string>() };
  const wanted = occs.flatMap((o) => [
    keys.inflight(o),
    keys.pending(o.job, gateScope(o), o.shard, o.fireTime),
    keys.history(o, 1),
  ]);
  const found: (string | null | undefined)[] = await getManyInSlices(store, wanted, KEYS_PER_OCCURRENCE);
  return Promise.all(
    occs.map(async (o, i): Promise<BackfillLook> => {
      const item = `${o.scheduleId}\u0000${o.fireTime}`;
      if (o.scheduleId !== undefined && pages.won.has(item)) return 'ran';
      if (o.scheduleId !== undefined && pages.pending.has(item)) return 'pending';
      const [inflight, pending, first] = found.slice(i * KEYS_PER_OCCURRENCE, (i + 1) * KEYS_PER_OCCURRENCE);
      if ((inflight ?? null) !== null) return 'ran';
      // A queued run's record outlives nothing it stands for: its start (or its skip) consumes it.
      const queued = (pending ?? null) !== null ? 'queued' : undefined;
      if (first === undefined || first === null) return queued;
      if (isRun(decodeHistory(first, keys.history(o, 1)))) return 'ran';
      return (await attempts(store, o)).some(isRun) ? 'ran' : queued;
    }),
  );
}

/** Every attempt's history entry of the occurrence (one scan; at most 100 attempts). */
export async function attempts(store: Store, occ: OccurrenceId): Promise<HistoryEntry[]> {
  const records = await store.scan(keys.occurrenceHistoryPrefix(occ), { limit: 100 });
  return records.map((r) => decodeHistory(r.value, r.key));
}

/**
 * Whether a backfill of `scheduleId` (a stored schedule of `job`) first read at `seenAt` must wait
 * still at store time `now`: a page-claimed schedule under overlap `skip` starts its backfill
 * runs no sooner than BACKFILL_SETTLE_MS after that (claim/gated-runs.ts).
 */
export function settling(
  s: NodeState,
  job: Job,
  scheduleId: string | undefined,
  seenAt: number,
  now: number,
): boolean {
  return pageGated(s, job, scheduleId) && now < seenAt + BACKFILL_SETTLE_MS;
}

/** Whether backfill runs of `scheduleId` must exclude its page runs by hand (claim/gated-runs.ts). */
function pageGated(s: NodeState, job: Job, scheduleId: string | undefined): boolean {
  return gateScope({ scheduleId }) !== undefined && job.spec.overlap === 'skip' && claimsInPages(s, job);
}

/**
 * A backfill claim was granted (claim.ts): whether to run it. Looks again (see {@link lookUp})
 * now that the occurrence is held here — the look when the request was written is older, and the
 * fire time's original run may have settled since (its history and its "done" release are one
 * batch, so a grant after that hold finds its history). Already run or going: the request is
 * consumed and the leases freed as they were (plainly: a dead run's recovery must be able to take
 * the occurrence), never run; likewise when its stored schedule was removed since. Else the
 * run's attempt is the one after every attempt on record (history is keyed per attempt: a pause's
 * skipped entry, a dead attempt, a superseded queued run, keep theirs), its data the stored
 * schedule's, read now, and a pending record of the fire time (queued behind its gate) goes in its
 * start batch: this run is the one it stood for. A stored schedule claimed in pages (overlap
 * `skip`): the leases are given back, the request kept for a later poll, while its node read the
 * request less than BACKFILL_SETTLE_MS ago, or while a page run of the schedule has not ended
 * (waited for up to MAX_PAGE_WAIT_MS first — meanwhile this poll waits too): claim/gated-runs.ts.
 */
export async function backfillClaimed(
  s: NodeState,
  c: Candidate,
  lease: Lease,
  gate: Lease | null | undefined,
  sentAt: number,
): Promise<boolean> {
  const { scheduleId } = c.occ;
  const job = s.defined.get(c.occ.job);
  const gated = job !== undefined && pageGated(s, job, scheduleId);
  const frees: WriteOp[] = [lease, ...(gate ? [gate] : [])].map((l) => ({
    op: 'release',
    key: l.key,
    token: l.token,
  }));
  // Too soon after this node first read the request (claim/gated-runs.ts): given back, offered
  // again at a later poll.
  if (gated && lease.acquiredAt < (c.seenAt ?? Number.POSITIVE_INFINITY) + BACKFILL_SETTLE_MS) {
    await settle(s, `backfill of ${c.occ.job}`, frees, lease, sentAt);
    return false;
  }
  const [[look], schedule] = await Promise.all([
    lookUp(s.store, c.occ.job, [c.occ]),
    scheduleId === undefined ? undefined : s.store.get(keys.schedule(scheduleId)),
  ]);
  // A stored schedule removed (or given to another job) since: its queued fire times are dropped.
  const record =
    typeof schedule === 'string' ? (JSON.parse(schedule) as { job: string; data?: unknown }) : undefined;
  const gone = scheduleId !== undefined && record?.job !== c.occ.job;
  if (look === 'ran' || gone) {
    await settle(s, `backfill of ${c.occ.job}`, [...consumeRequest(c.occ), ...frees], lease, sentAt);
    return false;
  }
  // Held by a page that has not started: it may run it (then this request is consumed at a later
  // look) or not (then it is run here). Given back, the request kept, offered again next poll.
  if (look === 'pending') {
    await settle(s, `backfill of ${c.occ.job}`, frees, lease, sentAt);
    return false;
  }
  // A page run of the schedule not ended (claim/gated-runs.ts): read after this claim took the
  // gate, and again every PAGE_WAIT_STEP_MS for a little while (a schedule that runs most of the
  // time leaves gaps a claim made at each poll would rarely land in); then given back, offered
  // again at a later poll (on-time runs keep their slot).
  if (gated) {
    const until = s.clock.monotonic() + Math.min(MAX_PAGE_WAIT_MS, job.spec.lockAtMostForMs / 4);
    while (await pageRunGoing(s.store, c.occ.job, scheduleId!, lease.acquiredAt, job.spec.retries)) {
      if (s.clock.monotonic() + PAGE_WAIT_STEP_MS > until || s.stopping !== undefined) {
        await settle(s, `backfill of ${c.occ.job}`, frees, lease, sentAt);
        return false;
      }
      await s.clock.sleep(PAGE_WAIT_STEP_MS);
    }
  }
  const onRecord = await attempts(s.store, c.occ);
  c.attempt = Math.max(0, ...onRecord.map((e) => e.attempt)) + 1;
  // The schedule's data as it is now (the request does not copy it: up to 64 KiB each).
  if (record !== undefined) c.data = record.data;
  if (look === 'queued') {
    const { job, fireTime, shard } = c.occ;
    const pending = keys.pending(job, gateScope(c.occ), shard, fireTime);
    c.startWrites = [...(c.startWrites ?? []), { op: 'delete', key: pending }];
  }
  return true;
}

/**
 * A backfill claim was refused: the occurrence is held. A claim about to run (or running) holds it
 * at most a lease; one settled earlier is held "done" for at least an hour (claim/high-water.ts) —
 * also one settled without a run (missed and skipped, skipped for overlap). Such a hold, on a fire
 * time that has not run, is released here (its token, as inspected) so that the next poll's claim
 * of the request wins it; a fire time that has run consumes its request. A hold released meanwhile
 * by a late claimant just makes the release refused; a claimant that wins the freed occurrence
 * first runs it (it had not run) — or, a queued run of it, finds it skipped on record and settles
 * it "done" again, never run (claim.ts) — and this request is then consumed, or looked at again,
 * by its next claim.
 */
export async function backfillRefused(s: NodeState, c: Candidate): Promise<void> {
  const spec = s.defined.get(c.occ.job)?.spec;
  if (!spec) return;
  const key = keys.occurrence(c.occ);
  const held = await s.store.inspect(key);
  if (held === null || !isHold(s, held, spec.lockAtMostForMs)) return;
  const [look] = await lookUp(s.store, c.occ.job, [c.occ]);
  if (look === 'ran') await s.store.apply(consumeRequest(c.occ));
  else await s.store.release(key, held.token);
}

/**
 * Whether a lease as inspected is a "done" hold (released with `holdUntil`, claim/high-water.ts)
 * rather than a claim still to run: it ends later than a lease of `leaseMs` granted now could (a
 * keep-alive extends a lease to at most that), with HOLD_MARGIN_MS for the store clock's estimate.
 */
export function isHold(s: NodeState, held: { expiresAt: number }, leaseMs: number): boolean {
  return held.expiresAt > s.storeClock.estimate() + leaseMs + HOLD_MARGIN_MS;
}
