import { decodeHistory } from '../../scheduler/history.js';
import type { RunSource } from '../../scheduler/types.js';
import type { WriteOp } from '../../store/types.js';
import { EPOCH } from './sim-store.js';

/** One call of a job's handler by the real scheduler, as the simulator saw it. */
export interface Invocation {
  /** Occurrence: job, schedule, fire time (store ms), shard. */
  occ: string;
  job: string;
  fireTime: number;
  shard: number | undefined;
  /** `node#incarnation`: a restarted node is a new incarnation (same or new node id). */
  node: string;
  attempt: number;
  token: number;
  source: RunSource;
  /** Virtual ms. */
  startedAt: number;
  /** When the handler returned or threw, or its node crashed. */
  endedAt?: number;
  ended?: 'ok' | 'error' | 'crashed';
  /** When `ctx.signal` aborted (lease about to be lost, timeout), even after the handler ended. */
  abortedAt?: number;
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
          this.line(node, `stored   ${occ} skipped token=${entry.token}`);
        }
        if (entry.status !== 'succeeded') return;
        const list = this.stored.get(occ) ?? [];
        list.push({ token: entry.token, at: this.now() });
        this.stored.set(occ, list);
        this.line(node, `stored   ${occ} succeeded token=${entry.token} attempt=${entry.attempt}`);
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
