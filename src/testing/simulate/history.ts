import { decodeHistory } from '../../scheduler/finish/history.js';
import type { RunSource } from '../../scheduler/types.js';
import type { WriteOp } from '../../store/types.js';
import { EPOCH } from './sim-store.js';

/** One call of a job's handler by the real scheduler, as the simulator saw it. */
export interface Invocation {
  /** Occurrence: job, schedule, fire time (store ms), shard. */
  occ: string;
  /** The job's name. */
  job: string;
  /** Nominal fire time, store ms. */
  fireTime: number;
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
}

/** An in-flight record the store applied: a run's start as the store saw it. */
export interface StoredRun {
  key: string;
  value: string;
  job: string;
  scheduleId?: string;
  shard?: number;
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
  /** Per occurrence: the `succeeded` history records the store applied (token, virtual ms). */
  readonly stored = new Map<string, { token: number; at: number }[]>();
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

  /** A write batch the store applied: succeeded and skipped history records, and refused finish releases. */
  applied(node: string, ops: readonly WriteOp[], results: readonly boolean[]): void {
    ops.forEach((op, i) => {
      if (op.op === 'put' && op.key.startsWith('hist|')) {
        const entry = decodeHistory(op.value);
        const occ = occKey(entry.job, entry.fireTime.getTime(), entry.shard, entry.scheduleId);
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
          });
          const by = entry.by ? ` by=${fireLabel(entry.by.fireTime.getTime())}` : '';
          this.line(
            node,
            `stored   ${occ} skipped (${entry.reason ?? 'no reason'}${by}) token=${entry.token}`,
          );
        }
        if (entry.status !== 'succeeded') return;
        const list = this.stored.get(occ) ?? [];
        list.push({ token: entry.token, at: this.now() });
        this.stored.set(occ, list);
        this.line(node, `stored   ${occ} succeeded token=${entry.token} attempt=${entry.attempt}`);
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
        this.inflight.push({ key: op.key, value: op.value, ...rec, startedAt, putAt: this.now() });
      } else if (op.op === 'delete' && op.key.startsWith('ctl|run|') && results[i] !== false) {
        for (const r of this.inflight)
          if (
            r.key === op.key &&
            r.deletedAt === undefined &&
            (op.ifValue === undefined || op.ifValue === r.value)
          )
            r.deletedAt = this.now();
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

  outcome(o: Omit<Outcome, 'at'>, detail = ''): void {
    this.outcomes.push({ ...o, at: this.now() });
    this.line(o.node, `${o.kind.padEnd(8)} ${o.occ}${detail}`);
  }
}
