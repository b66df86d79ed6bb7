import { decodePageRecord } from '../../scheduler/claim/page-record.js';
import { decodeHistory } from '../../scheduler/finish/history.js';
import { parseDueEntry } from '../../scheduler/keys.js';
import type { RunSource } from '../../scheduler/types.js';
import type { Lease, LeaseRequest, PageClaim, PageOp, WriteOp } from '../../store/types.js';
import { EPOCH } from './sim-store.js';

/** One call of a job's handler by the real scheduler, as the simulator saw it. */
export interface Invocation {
  /** Occurrence: job, schedule, fire time (store ms), shard. */
  occ: string;
  /** The job's name. */
  job: string;
  /** The stored schedule it ran for (`ctx.scheduleId`), if any. */
  scheduleId: string | undefined;
  /** Nominal fire time, store ms. */
  fireTime: number;
  /**
   * When it was to start (`ctx.scheduledAt`, store ms): the fire time plus its jitter offset.
   * Absent in a history built by hand (not judged then).
   */
  scheduledAt?: number;
  /** The shard index, or `undefined` for an unsharded job. */
  shard: number | undefined;
  /** `node#incarnation`: a restarted node is a new incarnation (same or new node id). */
  node: string;
  /** The run's attempt number (`ctx.attempt`). */
  attempt: number;
  /** The run's fencing token (`ctx.token`). */
  token: number;
  /** Why it ran. */
  source: RunSource;
  /** Virtual ms. */
  startedAt: number;
  /** When the handler returned or threw, or its node crashed. */
  endedAt?: number;
  /** How it ended: returned, threw, or its node crashed; absent while running. */
  ended?: 'ok' | 'error' | 'crashed';
  /** When `ctx.signal` aborted (lease about to be lost, timeout), even after the handler ended. */
  abortedAt?: number;
}

/** A skipped history record the store applied. */
export interface StoredSkip {
  occ: string;
  job: string;
  scheduleId: string | undefined;
  shard: number | undefined;
  /** Store ms. */
  fireTime: number;
  /** Virtual ms the store applied it. */
  at: number;
  reason: string;
  byFireTime?: number;
  /** (`overlap`) the fencing token of the run it names. */
  byToken?: number;
  /** A `paused` skip's span: its last fire time (store ms; `fireTime` is its first). */
  spanLast?: number;
}

/**
 * An in-flight record the store applied: a run's start as the store saw it — a run's own record
 * (`ctl|run|…`), or one won `run` item of a started page record (`ctl|page|…`: `occ` and `token`
 * set), which ends when its occurrence's outcome (or abandoned attempt) under that token is stored,
 * or when the record is deleted or rewritten.
 */
export interface StoredRun {
  key: string;
  value: string;
  job: string;
  scheduleId?: string | undefined;
  shard?: number | undefined;
  /** (A page's item) the occurrence, and the page token it runs under. */
  occ?: string;
  token?: number;
  /** Store ms, as the record says (a recovery's: the start of the run it recovers). */
  startedAt: number;
  /** Virtual ms. */
  putAt: number;
  deletedAt?: number;
}

/** An outcome the scheduler reported through its events. */
export interface Outcome {
  kind: 'succeeded' | 'failed' | 'skipped' | 'misfired';
  at: number;
  node: string;
  job: string;
  /** misfired: the stored schedule, if any (its span covers that schedule's fire times only). */
  scheduleId?: string | undefined;
  occ: string;
  fireTime: number;
  /** misfired: first fire time of the span; `action` run (replay follows) or skipped. */
  firstFireTime?: number;
  action?: 'run' | 'skipped';
  token?: number;
  attempt?: number;
  /** failed: no retry follows. */
  final?: boolean;
}

export function occKey(
  job: string,
  fireTime: number,
  shard: number | undefined,
  scheduleId?: string,
): string {
  return `${job}${scheduleId === undefined ? '' : `/${scheduleId}`}@${fireLabel(fireTime)}${shard === undefined ? '' : `#${shard}`}`;
}

/** A fire time relative to the simulation's store epoch, e.g. `+12.000s`. */
export function fireLabel(fireTime: number): string {
  return `+${((fireTime - EPOCH) / 1000).toFixed(3)}s`;
}

/** Everything that happened, and a readable trace of it (one line per event). */
export class History {
  readonly invocations: Invocation[] = [];
  readonly outcomes: Outcome[] = [];
  readonly trace: string[] = [];
  /**
   * Per occurrence: the `succeeded` history records the store applied (token, virtual ms);
   * `lapsed`: written under a page's token when that page's lease was no longer held by it (the
   * store's own view, looked up as it applied the write): a recovery may have run it meanwhile.
   */
  readonly stored = new Map<string, { token: number; at: number; lapsed?: boolean }[]>();
  /**
   * Occurrences the store holds a `skipped` history record of: on record as skipped even when the
   * node that wrote it crashed before it could emit its `skipped` event.
   */
  readonly storedSkipped = new Set<string>();
  /**
   * The skipped history records as the store applied them (virtual ms), with their reason and
   * the run they name: judged against the in-flight records below (checker.ts).
   */
  readonly skips: StoredSkip[] = [];
  /**
   * Every in-flight record the store applied (`ctl|run|…`, a run's start), with when its delete
   * (the run's finish, or the recovery's clean-up) was applied: the runs as the store saw them.
   */
  readonly inflight: StoredRun[] = [];
  /**
   * Tokens whose finish batch found their occurrence lease gone (its release refused): the lease
   * lapsed before the outcome was stored, so a recovery may legitimately run the occurrence again.
   */
  readonly lapsed = new Set<number>();
  /** Attempts the store holds an `abandoned` history record of, as `<occ>|<attempt>`: not a run of the fire time. */
  readonly abandoned = new Set<string>();
  /** Setup calls of the options (a pause, resume or backfill) that failed, each as a sentence. */
  readonly setupFailures: string[] = [];
  /** Page tokens (of a page claim, or of a page taken over by recovery), with their page's lease key. */
  readonly pageTokens = new Map<number, string>();
  /**
   * Misfire skips on record: a page claim the store applied moved a due entry as `settle` (missed
   * and skipped by the misfire policy) from `from` to its next fire time — the fire times in
   * [from, to] are skipped, reported or not (the claimant may die, or lose the claim's reply, before
   * it emits its `misfired` event; a page recovery runs no settle item).
   */
  readonly settled: { job: string; scheduleId: string; from: number; to: number }[] = [];
  /** Page claims the store granted, the due entries they moved, and pages taken over by recovery. */
  readonly pages = { claims: 0, moved: 0, takeovers: 0 };

  constructor(private readonly now: () => number) {}

  line(node: string, what: string): void {
    this.trace.push(`${(this.now() / 1000).toFixed(3).padStart(9)}s  ${node.padEnd(8)} ${what}`);
  }

  start(inv: Omit<Invocation, 'startedAt'>): Invocation {
    const record: Invocation = { ...inv, startedAt: this.now() };
    this.invocations.push(record);
    this.line(inv.node, `start    ${inv.occ} attempt=${inv.attempt} token=${inv.token} source=${inv.source}`);
    return record;
  }

  end(inv: Invocation, how: 'ok' | 'error' | 'crashed'): void {
    if (inv.ended) return;
    inv.ended = how;
    inv.endedAt = this.now();
    this.line(inv.node, `end      ${inv.occ} token=${inv.token} ${how}`);
  }

  aborted(inv: Invocation, reason: string): void {
    if (inv.abortedAt !== undefined) return;
    inv.abortedAt = this.now();
    this.line(inv.node, `abort    ${inv.occ} token=${inv.token} (${reason})`);
  }

  /** A page claim the store answered: its lease (the page's token) and how many entries it moved. */
  claimed(node: string, request: LeaseRequest, ops: readonly PageOp[], claim: PageClaim): void {
    if (!claim.lease) return;
    // A due entry moved past a fire time run elsewhere (scheduler/due/move-past.ts): no page.
    if (request.key.startsWith('mvcall|')) {
      for (const [i, op] of ops.entries())
        if (op.op === 'move')
          this.line(
            node,
            `moved    ${op.from} to ${op.to} (past a fire time run elsewhere): ${claim.results[i]}`,
          );
      return;
    }
    this.pageTokens.set(claim.lease.token, request.key);
    const moves = ops.filter((op) => op.op === 'move').length;
    const moved = ops.filter((op, i) => op.op === 'move' && claim.results[i]).length;
    const recordOp = ops.find((op) => op.op === 'put' && op.key.startsWith('ctl|page|'));
    const rec = recordOp && decodePageRecord((recordOp as { value: string }).value);
    // The record's items are the claim's moves, in order.
    rec?.items.forEach((item, i) => {
      const op = ops[i];
      if (item.kind !== 'settle' || op?.op !== 'move' || !claim.results[i]) return;
      const next = op.to.startsWith('due|') ? parseDueEntry(op.to).fireTime : Number.POSITIVE_INFINITY;
      this.settled.push({ job: rec.job, scheduleId: item.id, from: item.fireTime, to: next - 1 });
    });
    this.pages.claims++;
    this.pages.moved += moved;
    this.line(
      node,
      `page     ${request.key} token=${claim.lease.token} moved ${moved} of ${moves} due entries`,
    );
  }

  /** Leases the store granted: a page's lease granted again is a recovery taking the page over. */
  granted(node: string, leases: readonly (Lease | null)[]): void {
    for (const lease of leases) {
      if (!lease?.key.startsWith('page|')) continue;
      this.pageTokens.set(lease.token, lease.key);
      this.pages.takeovers++;
      this.line(node, `takeover ${lease.key} token=${lease.token}`);
    }
  }

  /**
   * The page leases a batch's `succeeded` history records are written under (their token is a
   * page's): the sim store looks each up just before it applies the batch (see `applied`).
   */
  pageLeasesOf(ops: readonly WriteOp[]): { key: string; token: number }[] {
    const out: { key: string; token: number }[] = [];
    for (const op of ops) {
      if (op.op !== 'put' || !op.key.startsWith('hist|')) continue;
      const entry = decodeHistory(op.value, op.key);
      const key = this.pageTokens.get(entry.token);
      if (entry.status === 'succeeded' && key !== undefined) out.push({ key, token: entry.token });
    }
    return out;
  }

  /**
   * A write batch the store applied: succeeded and skipped history records, in-flight records and
   * page records, and refused finish releases. `notHeld`: page tokens whose lease the store did not
   * hold for them when it applied the batch.
   */
  applied(
    node: string,
    ops: readonly WriteOp[],
    results: readonly boolean[],
    notHeld: ReadonlySet<number> = new Set(),
  ): void {
    ops.forEach((op, i) => {
      if (op.op === 'put' && op.key.startsWith('hist|')) {
        const entry = decodeHistory(op.value, op.key);
        const occ = occKey(entry.job, entry.fireTime.getTime(), entry.shard, entry.scheduleId);
        if (entry.status !== 'running' && entry.willRetry !== true) this.endPageRun(occ, entry.token);
        if (entry.status === 'skipped' && !this.storedSkipped.has(occ)) {
          this.storedSkipped.add(occ);
          this.skips.push({
            occ,
            job: entry.job,
            scheduleId: entry.scheduleId,
            shard: entry.shard,
            fireTime: entry.fireTime.getTime(),
            at: this.now(),
            reason: entry.reason ?? '?',
            ...(entry.by !== undefined && { byFireTime: entry.by.fireTime.getTime() }),
            ...(entry.by?.token !== undefined && { byToken: entry.by.token }),
            ...(entry.span !== undefined && { spanLast: entry.span.last.getTime() }),
          });
          const by = entry.by ? ` by=${fireLabel(entry.by.fireTime.getTime())}` : '';
          const span = entry.span ? ` last=${fireLabel(entry.span.last.getTime())}` : '';
          this.line(
            node,
            `stored   ${occ} skipped (${entry.reason ?? 'no reason'}${by}${span}) token=${entry.token}`,
          );
        }
        if (entry.status === 'abandoned') this.abandoned.add(`${occ}|${entry.attempt}`);
        if (entry.status !== 'succeeded') return;
        const lapsed = notHeld.has(entry.token);
        const list = this.stored.get(occ) ?? [];
        list.push({ token: entry.token, at: this.now(), ...(lapsed && { lapsed }) });
        this.stored.set(occ, list);
        this.line(
          node,
          `stored   ${occ} succeeded token=${entry.token} attempt=${entry.attempt}${lapsed ? ' (its page lease had lapsed)' : ''}`,
        );
      } else if (op.key.startsWith('ctl|page|') && results[i] !== false) {
        if (op.op === 'put') this.pageRecord(op.key, op.value);
        else if (op.op === 'delete') this.endRecord(op.key, op.ifValue);
      } else if (op.key.startsWith('ctl|pending|') && (op.op === 'put' || op.op === 'delete')) {
        const fire = Number(op.key.split('|').at(-1));
        const what =
          op.op === 'put'
            ? (JSON.parse(op.value) as { wait?: boolean }).wait
              ? 'waits'
              : 'queued'
            : 'dequeued';
        if (results[i] !== false)
          this.line(node, `${what.padEnd(8)} ${op.key.split('|')[2]}@${fireLabel(fire)} behind its gate`);
      } else if (op.op === 'put' && op.key.startsWith('ctl|run|') && results[i] !== false) {
        const rec = JSON.parse(op.value) as {
          job: string;
          scheduleId?: string;
          shard?: number;
          startedAt: number;
          runningSince?: { startedAt: number };
        };
        // A recovery's record: the occurrence has been running since the run it recovers started.
        const startedAt = rec.runningSince?.startedAt ?? rec.startedAt;
        this.begin({ key: op.key, value: op.value, ...rec, startedAt, putAt: this.now() });
      } else if (op.op === 'delete' && op.key.startsWith('ctl|run|') && results[i] !== false) {
        this.endRecord(op.key, op.ifValue);
      } else if (
        op.op === 'release' &&
        op.key.startsWith('occ|') &&
        op.holdUntil !== undefined &&
        !results[i]
      ) {
        this.lapsed.add(op.token);
        this.line(node, `refused  release of ${op.key} token=${op.token} (lease had lapsed)`);
      }
    });
  }

  /** In-flight runs not ended yet, by record key, and a page's by occurrence and token. */
  private readonly open = new Map<string, StoredRun[]>();
  private readonly openPageRuns = new Map<string, StoredRun>();

  private begin(run: StoredRun): void {
    this.inflight.push(run);
    const list = this.open.get(run.key);
    if (list) list.push(run);
    else this.open.set(run.key, [run]);
    if (run.occ !== undefined) this.openPageRuns.set(`${run.occ}|${run.token}`, run);
  }

  /** A record deleted (as `ifValue`, if given) or rewritten: the runs it stood for end. */
  private endRecord(key: string, ifValue: string | undefined): void {
    const list = this.open.get(key);
    if (!list) return;
    const left = list.filter((r) => {
      if (r.deletedAt !== undefined) return false;
      if (ifValue !== undefined && ifValue !== r.value) return true;
      r.deletedAt = this.now();
      return false;
    });
    if (left.length > 0) this.open.set(key, left);
    else this.open.delete(key);
  }

  /** A page record written: a started one stands for its won `run` items as in-flight runs. */
  private pageRecord(key: string, value: string): void {
    // The same write again (a retry after a lost reply): the runs it stands for go on.
    if (this.open.get(key)?.some((r) => r.value === value)) return;
    this.endRecord(key, undefined);
    const rec = decodePageRecord(value);
    const started = rec.started;
    if (!started) return;
    // A recovery's record: its items have been running since the page's first run started.
    const startedAt = started.since?.at ?? started.at;
    for (const i of started.won) {
      const item = rec.items[i];
      if (item?.kind !== 'run') continue;
      this.begin({
        key,
        value,
        job: rec.job,
        scheduleId: item.id,
        occ: occKey(rec.job, item.fireTime, undefined, item.id),
        token: started.token,
        startedAt,
        putAt: this.now(),
      });
    }
  }

  /** An outcome of `occ` under `token` stored: a page's run of it ends (its record may stay for others). */
  private endPageRun(occ: string, token: number): void {
    const key = `${occ}|${token}`;
    const run = this.openPageRuns.get(key);
    if (!run) return;
    this.openPageRuns.delete(key);
    if (run.deletedAt === undefined) run.deletedAt = this.now();
  }

  outcome(o: Omit<Outcome, 'at'>, detail = ''): void {
    this.outcomes.push({ ...o, at: this.now() });
    this.line(o.node, `${o.kind.padEnd(8)} ${o.occ}${detail}`);
  }
}
