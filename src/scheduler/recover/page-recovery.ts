import { getManyInSlices } from '../../store/get-many.js';
import type { StoredRecord, WriteOp } from '../../store/types.js';
import { gatedHeld, judgeGated } from '../claim/gated-runs.js';
import {
  decodeDueValue,
  decodePageRecord,
  encodePageRecord,
  itemOcc,
  type PageItem,
  type PageRecord,
  pageKeys,
  pageOfRecordKey,
  peekPageRecord,
} from '../claim/page-record.js';
import { skippedEntry, storeWhileHeld } from '../claim/page-writes.js';
import { heldBackSkip } from '../control/removed-span.js';
import type { StoredScheduleRecord } from '../control/schedule-input.js';
import { decodeHistory, encodeHistory, occFields } from '../finish/history.js';
import type { Job } from '../internal-types.js';
import { keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { PageRun } from '../run/page-run.js';
import { launchAtStarts, launchWhenFree, notBefore } from '../run/page-starts.js';
import type { Claim } from '../run/run-records.js';
import type { Runs } from '../run/runs.js';
import type { HistoryEntry, SchedulerEvents } from '../types.js';

/** Statuses that end an occurrence (a failed attempt followed by a retry does not). */
const FINAL = new Set(['succeeded', 'failed', 'timed-out', 'skipped']);

/** What a dead page's item needs. */
interface Plan {
  /** The attempt to run next (`undefined`: nothing to run: it ended, or it is not to be recovered). */
  attempt?: number;
  /** Written with the page's new start: the dead attempt recorded abandoned, or a skip never recorded. */
  write?: WriteOp;
}

/**
 * Pages whose lease lapsed with runs unfinished (their node died, froze past its lease, or gave
 * them up on stop): taken over — a fresh grant of the page's lease, so a higher token — and the
 * runs without a final outcome on record run again here (attempt + 1, source `recover`, the dead
 * attempt recorded abandoned in the page's new start). A page that never wrote its start ("claimed,
 * never started") has its won items — the entries its claim moved, which name it — run as
 * recoveries, whatever the misfire policy. Without `recover`, the dead attempts are recorded
 * abandoned and nothing runs. Each poll sees every page record (a `ctl|` record); a record is not
 * looked at before its lease could have ended.
 */
export class PageRecovery {
  /** Records known not to be due for a look before this store time, by key. */
  private youngUntil = new Map<string, number>();

  constructor(
    private readonly state: NodeState,
    private readonly runs: Runs,
  ) {}

  async recover(records: readonly StoredRecord[], now: number): Promise<void> {
    const s = this.state;
    const known = this.youngUntil;
    const young = new Map<string, number>();
    this.youngUntil = young;
    for (const r of records) {
      if (s.pagesHere.has(r.key)) continue;
      const until = known.get(r.key);
      if (until !== undefined && until > now) {
        young.set(r.key, until);
        continue;
      }
      const rec = peekPageRecord(r.value);
      const job = s.defined.get(rec.job);
      if (!job || s.paused.has(rec.job)) continue;
      const claimedAt = rec.started?.claimedAt;
      if (claimedAt !== undefined && claimedAt + rec.leaseMs > now) {
        young.set(r.key, claimedAt + rec.leaseMs);
        continue;
      }
      const page = pageOfRecordKey(r.key);
      const held = await s.store.inspect(pageKeys(rec.job, page).lease);
      if (held) {
        young.set(r.key, held.expiresAt);
        continue;
      }
      await this.takeOver(job, page, r);
    }
  }

  /**
   * A limited job's page is taken over only once the fleet grants a permit for each of its runs
   * (run/fleet-limits.ts; what it does not launch goes back): recovered runs started beyond
   * `maxConcurrency` and `rateLimit` — a page whose claim lost its answer had given its permits
   * back, and its recovery started on top of the runs granted since (simulator, lost replies
   * only: 3 runs at once under maxConcurrency 2, 4 starts in 750 ms under 3 per second). A page of
   * a limited job holds at most what one grant allowed, so the same count comes free again; until
   * then the page waits for the next poll, as the rest of the job's due work waits.
   */
  private async takeOver(job: Job, page: string, read: StoredRecord): Promise<void> {
    const s = this.state;
    const readRec = decodePageRecord(read.value);
    if (!s.limits.limited(job.spec)) return this.takeOverNow(job, page, read, readRec);
    const want = readRec.started?.won.length ?? readRec.items.length;
    // In line from its oldest item's start: the page is taken over whole or not at all.
    const oldest = Math.min(...readRec.items.map((it) => it.at ?? it.fireTime));
    const permits = await s.limits.reserve(job.spec, want, new Array<number>(want).fill(oldest));
    try {
      if (permits.granted >= want) await this.takeOverNow(job, page, read, readRec);
    } finally {
      s.limits.settled(job.spec, permits);
    }
  }

  private async takeOverNow(job: Job, page: string, read: StoredRecord, readRec: PageRecord): Promise<void> {
    const s = this.state;
    const name = job.spec.name;
    const { lease: leaseKey, record: recordKey } = pageKeys(name, page);
    const sentAt = s.clock.monotonic();
    const [lease] = await s.store.acquire([
      { key: leaseKey, owner: s.node, leaseMs: job.spec.lockAtMostForMs },
    ]);
    const repliedAt = s.clock.monotonic();
    if (!lease) return;
    const release: WriteOp = { op: 'release', key: leaseKey, token: lease.token };
    // The record as it is now that this node holds the page. The poll's read may be older: its
    // holder may have written its start, run the page, deleted the record and released the lease
    // since — taken by that read, a page that ran would be run again as one never started. From
    // the grant on, only this node writes the record (its holder's writes stop before its lease
    // could have ended: page-writes.ts, page-run.ts).
    const current = await s.store.get(recordKey);
    if (current === null) {
      await s.writes
        .submit([release])
        .catch((err) => s.emit('error', { error: err, during: `release of a page of ${name}` }));
      return;
    }
    const rec = current === read.value ? readRec : decodePageRecord(current);
    // The recovery's start: the dead attempts end here on record, and the new runs start here.
    const at = lease.acquiredAt + Math.max(0, s.clock.monotonic() - sentAt);
    const won = rec.started?.won ?? (await this.claimedBy(rec, page));
    const own = rec.started
      ? await this.ownEntries(
          name,
          won.map((i) => rec.items[i]!),
        )
      : [];
    const plans = await Promise.all(
      won.map((i, n) => this.plan(job, rec, rec.items[i]!, lease.token, own[n] ?? null, at)),
    );
    const data = await this.data(
      won.filter((_, n) => plans[n]!.attempt !== undefined).map((i) => rec.items[i]!),
    );
    const toRun: number[] = [];
    const items: PageItem[] = rec.items.map((it) => ({ ...it }));
    const writes: WriteOp[] = [];
    /** Won items of a page that never started whose schedule is gone: recorded skipped, `removed`. */
    const removed: number[] = [];
    /** The `skipped` events of the fire times such items held back (removed-span.ts). */
    const heldBack: SchedulerEvents['skipped'][] = [];
    won.forEach((i, n) => {
      const p = plans[n]!;
      if (p.write) writes.push(p.write);
      const item = items[i]!;
      if (p.attempt === undefined) return;
      // A schedule removed or changed meanwhile: its dead run is not run again. A run that never
      // started (the page's claim was granted, its node died or lost the answer before its
      // start) would leave its fire time with no record at all: it is recorded skipped.
      if (!data.has(`${item.id}|${item.v}`)) {
        if (!rec.started) {
          writes.push(skippedEntry(s, itemOcc(name, item), item, lease.token, at, 'removed'));
          removed.push(i);
        }
        return;
      }
      item.attempt = p.attempt;
      item.source = 'recover';
      toRun.push(i);
    });
    // One audit read each, at once (a bulk removal may leave many): rare, only for removed items.
    for (const skip of await Promise.all(
      removed.map((i) => heldBackSkip(s, name, items[i]!, lease.token, at)),
    )) {
      if (!skip) continue;
      writes.push(skip.write);
      heldBack.push(skip.event);
    }
    const announce = () => {
      for (const i of removed)
        s.emit('skipped', { ...occFields(itemOcc(name, items[i]!)), reason: 'removed' });
      for (const e of heldBack) s.emit('skipped', e);
    };
    if (toRun.length === 0) {
      await s.writes.submit([...writes, { op: 'delete', key: recordKey, ifValue: current }, release]);
      announce();
      return;
    }
    const first =
      rec.started && (rec.started.since ?? { at: rec.started.at, node: rec.node, token: rec.started.token });
    const next: PageRecord = {
      job: name,
      node: s.node,
      leaseMs: job.spec.lockAtMostForMs,
      items,
      started: {
        at,
        claimedAt: lease.acquiredAt,
        token: lease.token,
        won: toRun,
        ...(first && { since: first }),
      },
    };
    const value = encodePageRecord(next);
    if (!(await storeWhileHeld(s, [{ op: 'put', key: recordKey, value }, ...writes], lease, sentAt))) return;
    announce();
    const run = new PageRun(s, job, lease, sentAt, recordKey, value, toRun.length, at);
    const claimOf = (i: number, waited: boolean): Claim => {
      const item = items[i]!;
      return {
        occ: itemOcc(name, item),
        lease,
        gate: undefined,
        sentAt,
        attempt: item.attempt!,
        source: 'recover',
        item: i,
        ...(!waited && { startedAt: at }),
        ...(item.at !== undefined && { scheduledAt: item.at }),
        data: data.get(`${item.id}|${item.v}`),
      };
    };
    // A backfill run of the schedule going or about to start (claim/gated-runs.ts): the recovery
    // waits for it to end (the page's claim may never have looked, its node dead before).
    // (A failed look: every run waits and looks again.)
    const gated = await judgeGated(s, job, items, toRun, lease.acquiredAt).then(
      (verdicts) => new Set(verdicts.keys()),
      () => new Set(toRun),
    );
    run.mark.wait(gated);
    for (const i of gated) {
      const item = items[i]!;
      const start = notBefore(item.at ?? item.fireTime, lease.acquiredAt, repliedAt);
      launchWhenFree(
        s,
        run,
        start,
        async () => !(await gatedHeld(s, name, item.id, lease.acquiredAt)),
        () => this.runs.launch(job, claimOf(i, true), undefined, run.book()),
      );
    }
    // A run claimed ahead of its start (jitter) whose node died before it: not started before it.
    launchAtStarts(
      s,
      run,
      lease,
      repliedAt,
      toRun
        .filter((i) => !gated.has(i))
        .map((i) => ({ start: items[i]!.at ?? items[i]!.fireTime, claim: (waited) => claimOf(i, waited) })),
      (claims) => this.runs.launchPage(job, claims, run.book()),
    );
  }

  /** The items a page that never wrote its start won: the entries its claim moved name it. */
  private async claimedBy(rec: PageRecord, page: string): Promise<number[]> {
    const values = await this.state.store.getMany(rec.items.map((it) => it.to));
    const won: number[] = [];
    values.forEach((v, i) => {
      if (v !== null && v !== undefined && decodeDueValue(v).page === page) won.push(i);
    });
    return won;
  }

  /**
   * What a won item of a dead page needs, from its history: nothing when its occurrence ended (or
   * it only settled a move); its skip recorded when the page died before recording it; else the
   * next attempt, with the dead one recorded abandoned (unless it is on record already, or the page
   * never started: then nothing ran). `own` is the history entry of the item's own attempt, read
   * for all items in one getMany; only an attempt followed by retries costs a scan of the rest.
   */
  private async plan(
    job: Job,
    rec: PageRecord,
    item: PageItem,
    token: number,
    own: HistoryEntry | null,
    at: number,
  ): Promise<Plan> {
    const s = this.state;
    const occ = itemOcc(job.spec.name, item);
    if (item.kind === 'settle') return {};
    if (item.kind === 'skip') return rec.started ? {} : { write: skippedEntry(s, occ, item, token, at) };
    const attempt = item.attempt ?? 1;
    if (!rec.started) return { attempt };
    let last = own ?? undefined;
    if (last?.willRetry === true || last?.status === 'abandoned') {
      // Retried after this attempt, or recovered after it: the latest attempt on record says how
      // far it got. (A record whose start write landed late — after a recovery of its page had
      // run the next attempt, finished and deleted the record — names an attempt recorded
      // abandoned; by it alone the next attempt ran again after its success.)
      const later = await s.store.scan(keys.occurrenceHistoryPrefix(occ), { limit: 100 });
      last = later.map((h) => decodeHistory(h.value, h.key)).at(-1) ?? last;
    }
    if (last && FINAL.has(last.status) && last.willRetry !== true) return {};
    // The attempt that died without an outcome on record: the page's own, or the one after a
    // failed-and-retried one; an attempt already recorded abandoned is followed by the next.
    const dead = last === undefined ? attempt : last.status === 'abandoned' ? undefined : last.attempt + 1;
    const nextAttempt = (dead ?? last!.attempt) + 1;
    if (!job.spec.recover)
      return dead === undefined ? {} : { write: this.abandoned(occ, rec, item, dead, token, at, false) };
    return {
      attempt: nextAttempt,
      ...(dead !== undefined && { write: this.abandoned(occ, rec, item, dead, token, at, true) }),
    };
  }

  /** The history entry of each won item's own attempt (one getMany per 1,000). */
  private async ownEntries(name: string, items: readonly PageItem[]): Promise<(HistoryEntry | null)[]> {
    const wanted = items.map((it) => keys.history(itemOcc(name, it), it.attempt ?? 1));
    const found = await getManyInSlices(this.state.store, wanted);
    return found.map((v, i) => (v === null || v === undefined ? null : decodeHistory(v, wanted[i]!)));
  }

  private abandoned(
    occ: OccurrenceId,
    rec: PageRecord,
    item: PageItem,
    attempt: number,
    token: number,
    at: number,
    recovered: boolean,
  ): WriteOp {
    const s = this.state;
    const started = rec.started!;
    const entry: HistoryEntry = {
      ...occFields(occ),
      ...(item.at !== undefined && { scheduledAt: new Date(item.at) }),
      node: rec.node,
      attempt,
      token: started.token,
      // The page's own attempt ran for the page's reason; a later one was a retry of it.
      source: attempt === (item.attempt ?? 1) ? item.source : 'retry',
      status: 'abandoned',
      startedAt: new Date(started.at),
      finishedAt: new Date(at),
      error: `node ${rec.node} stopped renewing its page's lease${recovered ? `; recovered by ${s.node} (token ${token})` : ''}`,
    };
    return { op: 'put', key: keys.history(occ, attempt), value: encodeHistory(entry), ttlMs: s.retentionMs };
  }

  /** The current data of the items' schedules, by `id|v` (a schedule removed or re-upserted is absent). */
  private async data(items: readonly PageItem[]): Promise<Map<string, unknown>> {
    const out = new Map<string, unknown>();
    const ids = [...new Set(items.map((it) => it.id))];
    for (let at = 0; at < ids.length; at += 1000) {
      const values = await this.state.store.getMany(ids.slice(at, at + 1000).map((id) => keys.schedule(id)));
      for (const v of values) {
        if (v === null || v === undefined) continue;
        const sch = JSON.parse(v) as StoredScheduleRecord;
        out.set(`${sch.id}|${sch.v}`, sch.data);
      }
    }
    return out;
  }
}
