import { OncelyError } from '../../core/errors.js';
import type { PageClaim, PageOp, WriteOp } from '../../store/types.js';
import { MAX_BATCH } from '../../store/validate.js';
import { occFields } from '../finish/history.js';
import type { Candidate, Job } from '../internal-types.js';
import type { NodeState } from '../node-state.js';
import { PageRun } from '../run/page-run.js';
import { launchAtStarts, launchWhenFree, notBefore, type PageStart } from '../run/page-starts.js';
import type { Claim } from '../run/run-records.js';
import type { Runs } from '../run/runs.js';
import type { SkipCause } from '../types.js';
import { countedMove } from './counted-page.js';
import { gatedHeld, judgeGated } from './gated-runs.js';
import {
  type DueValue,
  encodeDueValue,
  encodePageItems,
  encodePageRecord,
  itemOcc,
  type PageItem,
  type PageRecord,
  pageKeys,
  runMoveValue,
} from './page-record.js';
import { skippedEntry, storeWhileHeld } from './page-writes.js';
import { judgePrev, type PrevVerdict } from './prev-run.js';
import { prevOfReplaced } from './replaced-prev.js';

/** Items per page: one op of the claim is the page's record. */
const PAGE_ITEMS = MAX_BATCH - 1;

/**
 * Claims due entries of stored schedules in pages (page-record.ts): per job, up to PAGE_ITEMS
 * entries in one `claimPage` — each entry moved to its next fire time (the move is the claim: no
 * two nodes move one entry), plus the page's record — then one write marking the page started
 * (which items it won) before any of its handlers starts, then its runs under the page's lease.
 * Rows per occurrence: the move, and its history entry when the run ends.
 */
export class PageClaims {
  constructor(
    private readonly state: NodeState,
    private readonly runs: Runs,
  ) {}

  /** Claims the candidates (due entries of page-claimed jobs; see eligible.ts) and starts what it won. */
  async claim(candidates: readonly Candidate[]): Promise<void> {
    const byJob = new Map<string, Candidate[]>();
    for (const c of candidates) {
      const list = byJob.get(c.occ.job);
      if (list) list.push(c);
      else byJob.set(c.occ.job, [c]);
    }
    const pages: Promise<void>[] = [];
    for (const [name, cs] of byJob) {
      const job = this.state.defined.get(name);
      if (!job) continue;
      // An item of a schedule with maxRuns takes two ops (its remaining-runs record moves too).
      for (let at = 0, end = 0; at < cs.length; at = end) {
        for (let used = 0; end < cs.length && used + (cs[end]!.pageMove?.count ? 2 : 1) <= PAGE_ITEMS; end++)
          used += cs[end]!.pageMove?.count ? 2 : 1;
        pages.push(this.claimPage(job, cs.slice(at, end)));
      }
    }
    const failed = (await Promise.allSettled(pages)).find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async claimPage(job: Job, all: readonly Candidate[]): Promise<void> {
    const s = this.state;
    const name = job.spec.name;
    const looked = prevOfReplaced(s, all);
    if (looked) await looked;
    const verdicts = await judgePrev(s, job, all);
    const cs: Candidate[] = [];
    const judged: PrevVerdict[] = [];
    all.forEach((c, i) => {
      const v = verdicts[i]!;
      if (v.kind === 'wait') {
        // Judged again at a later read of the due index, not before (NodeState.claimWaits).
        s.dueWakeAt = Math.min(s.dueWakeAt, s.storeClock.estimate() + s.pollMs);
        s.claimWaits(c.occ.scheduleId!);
        return;
      }
      if (v.kind === 'missed') {
        // Late behind a run that has ended: the misfire policy's candidates instead (prev-run.ts),
        // which name no page in flight — nothing more to judge.
        for (const r of c.replanLate!(s.storeClock.estimate())) {
          cs.push(r);
          judged.push({ kind: 'claim' });
        }
        return;
      }
      cs.push(c);
      judged.push(v);
    });
    if (cs.length === 0) return;
    // From the node's id source: seeded in the simulator, so that a seed replays exactly.
    const page = s.newId();
    const { lease: leaseKey, record: recordKey } = pageKeys(name, page);
    const items: PageItem[] = cs.map((c, i) => {
      const v = judged[i]!;
      return {
        id: c.occ.scheduleId!,
        v: c.pageMove!.v,
        fireTime: c.occ.fireTime,
        ...(c.scheduledAt !== undefined && { at: c.scheduledAt }),
        to: c.pageMove!.to,
        // Excluded (Candidate.excluded): a skip item whose history is written with the start.
        kind: c.settleOnly ? 'settle' : c.excluded || v.kind === 'skip' ? 'skip' : 'run',
        source: c.source,
        ...(c.excluded && !c.settleOnly
          ? { reason: 'excluded' as const }
          : v.kind === 'skip' && { by: { ...v.by, fireTime: v.by.fireTime.getTime() } }),
      };
    });
    // maxRuns (control/runs-left.ts): a fire time this page will not run moves on uncounted.
    // (A page without maxRuns schedules: no array, no copy per item.)
    const counted = cs.some((c) => c.pageMove!.unrun)
      ? cs.map((c, i) => countedMove(c, items[i]!))
      : undefined;
    const record: PageRecord = { job: name, node: s.node, leaseMs: job.spec.lockAtMostForMs, items };
    const runMove = runMoveValue(name, page);
    const ops: PageOp[] = cs.map((c, i) => {
      const move = counted ? { ...c.pageMove!, ...counted[i]!.move } : c.pageMove!;
      const run = items[i]!.kind === 'run';
      let value: string;
      if (run && move.left === undefined) value = runMove(c.occ.fireTime);
      else {
        // The moved entry names the run of this fire time (the next claim judges overlap by it), or
        // carries over the run it still overlaps.
        const prev = run ? { page, fireTime: c.occ.fireTime } : move.prev;
        const due: DueValue = {
          job: name,
          page,
          ...(prev && { prev }),
          ...(move.left !== undefined && { left: move.left }),
          ...(c.pausedSpan !== undefined && items[i]!.kind === 'settle' && { spanned: true as const }),
        };
        value = encodeDueValue(due);
      }
      return {
        op: 'move',
        from: move.from,
        to: move.to,
        value,
        ...(move.next === undefined && { ttlMs: s.retentionMs }),
      };
    });
    // After the items' ops (results[i] is item i's move): each moves exactly when its item's does.
    for (const x of counted ?? [])
      if (x.count) ops.push({ op: 'move', from: x.count.from, to: x.count.to, value: '' });
    let itemsText = encodePageItems(items);
    ops.push({ op: 'put', key: recordKey, value: encodePageRecord(record, itemsText) });
    s.telemetry.claim(name, 'attempted', cs.length);
    const sentAt = s.clock.monotonic();
    // No answer: if the page was granted, its record (never started) is recovered after its lease
    // by whichever node sees it (page-recovery.ts); entries it did not move are read again.
    const claimed: PageClaim = await s.store.claimPage(
      { key: leaseKey, owner: s.node, leaseMs: job.spec.lockAtMostForMs },
      ops,
    );
    const repliedAt = s.clock.monotonic();
    const lease = claimed.lease;
    if (!lease) throw new OncelyError('INTERNAL', `the new page lease ${leaseKey} was refused`);
    const won: number[] = [];
    // One result per item (the last op, the record's put, is always applied with the lease).
    cs.forEach((c, i) => {
      if (claimed.results[i] !== true) return;
      won.push(i);
      c.onWon?.();
    });
    s.telemetry.claim(name, 'won', won.length);
    s.telemetry.claim(name, 'refused', cs.length - won.length);
    const release: WriteOp = { op: 'release', key: leaseKey, token: lease.token };
    if (won.length === 0) {
      // Every entry was moved by others first: nothing of this page is on record but its record.
      await s.writes.submit([{ op: 'delete', key: recordKey }, release]).catch(() => {});
      return;
    }
    // A backfill run of one of these schedules going, or about to start (gated-runs.ts): its
    // item is skipped naming it, or waits on this node until it has ended. (A schedule with
    // maxRuns waits rather than skips: its move counted a run.)
    const gated = await judgeGated(s, job, items, won, lease.acquiredAt);
    for (const [i, v] of gated) {
      if (v.kind !== 'skip') continue;
      if (cs[i]!.pageMove!.count) {
        gated.set(i, {
          kind: 'wait',
          free: async () => !(await gatedHeld(s, name, items[i]!.id, lease.acquiredAt)),
        });
        continue;
      }
      items[i] = { ...items[i]!, kind: 'skip', by: { ...v.by, fireTime: v.by.fireTime.getTime() } };
      judged[i] = v;
      itemsText = '';
    }
    const startedAt = lease.acquiredAt + Math.max(0, s.clock.monotonic() - sentAt);
    record.started = { at: startedAt, claimedAt: lease.acquiredAt, token: lease.token, won };
    const value = encodePageRecord(record, itemsText === '' ? undefined : itemsText);
    const skips = won.filter((i) => items[i]!.kind === 'skip');
    const skipOps: WriteOp[] = skips.map((i) =>
      skippedEntry(s, itemOcc(name, items[i]!), items[i]!, lease.token, startedAt),
    );
    // The `paused` spans of settle items won (control/pause-span.ts): written by this page only.
    for (const i of won) {
      const span = cs[i]!.pausedSpan;
      if (span && items[i]!.kind === 'settle') skipOps.push(span(lease.token, startedAt));
    }
    // Stored before any handler starts: a page that never got here never causes a skip, and its
    // won runs are recovered as claimed-but-unstarted.
    if (!(await storeWhileHeld(s, [{ op: 'put', key: recordKey, value }, ...skipOps], lease, sentAt))) return;
    for (const i of skips) {
      if (items[i]!.reason === 'excluded')
        s.emit('skipped', { ...occFields(cs[i]!.occ), reason: 'excluded' });
      else {
        const v = judged[i] as { kind: 'skip'; by: SkipCause };
        s.emit('skipped', { ...occFields(cs[i]!.occ), reason: 'overlap', by: v.by });
      }
    }
    const runs = won.filter((i) => items[i]!.kind === 'run');
    const pageRun = new PageRun(s, job, lease, sentAt, recordKey, value, runs.length, startedAt);
    const book = pageRun.book();
    const claimOf = (i: number, waited: boolean): Claim => {
      const c = cs[i]!;
      // Built by assignment (one per run): conditional spreads made a temporary object each.
      const claim: Claim = {
        occ: c.occ,
        lease,
        gate: undefined,
        sentAt,
        attempt: 1,
        source: c.source,
        data: c.data,
        item: i,
      };
      if (c.source === 'misfire') claim.replay = true;
      if (c.scheduledAt !== undefined) claim.scheduledAt = c.scheduledAt;
      // A run that waited for its start (claimed ahead) started then, others with the page.
      if (!waited) claim.startedAt = startedAt;
      return claim;
    };
    const starts: PageStart[] = [];
    for (const i of runs) {
      const v = gated.get(i);
      if (v?.kind !== 'wait') {
        starts.push({
          start: cs[i]!.scheduledAt ?? cs[i]!.occ.fireTime,
          claim: (waited) => claimOf(i, waited),
        });
        continue;
      }
      const start = notBefore(cs[i]!.scheduledAt ?? cs[i]!.occ.fireTime, lease.acquiredAt, repliedAt);
      pageRun.mark.wait([i]);
      launchWhenFree(s, pageRun, start, v.free, () =>
        this.runs.launch(job, claimOf(i, true), undefined, book),
      );
    }
    // The runs whose start has come start together (run/page-batch.ts), the others in rounds.
    launchAtStarts(s, pageRun, lease, repliedAt, starts, (claims) => this.runs.launchPage(job, claims, book));
  }
}
