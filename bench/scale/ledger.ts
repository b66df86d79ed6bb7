/**
 * The ledger of one fan-out: every handler start the node processes reported, checked against
 * what was due. Due = schedules `u0 … u<due−1>` at the fire instant. A start of a due schedule
 * for that instant is an occurrence (its first start counts for lateness); a second start of
 * the same (schedule, fire time) is a duplicate; anything else (another schedule, or a due one
 * at another fire time) is unexpected. Systems that do not say the fire time (pg-boss) are
 * taken to mean the fire instant. With a warm-up (`--warm`), the starts of its schedules at its
 * instant are counted apart (`warmStarted`), neither occurrences nor unexpected.
 */
import { quantile } from '../stats.js';

export interface LedgerSummary {
  due: number;
  /** Due occurrences started at least once. */
  started: number;
  /** Starts beyond the first of the same (schedule, fire time). */
  duplicates: number;
  /** Starts of anything that was not due. */
  unexpected: number;
  /** Lateness of first starts, ms after the fire instant (NaN when none). */
  p50: number;
  p99: number;
  max: number;
  /** Occurrences started by each node (1-based node number → count). */
  perNode: Map<number, number>;
}

export class Ledger {
  /** Schedule id → its first start: host ms and node. */
  private readonly first = new Map<string, { at: number; node: number }>();
  private readonly starts = new Map<string, number>();
  private unexpected = 0;
  private duplicates = 0;

  /** First starts of the warm-up's schedules at its instant. */
  private readonly warmFirst = new Set<string>();

  constructor(
    readonly fireAt: number,
    readonly due: number,
    /** The warm-up fan-out (main.ts `--warm`): schedules `u<from>` … `u<from+count−1>` at `at`. */
    readonly warm?: { from: number; count: number; at: number },
  ) {}

  /** Warm-up occurrences started at least once. */
  get warmStarted(): number {
    return this.warmFirst.size;
  }

  /** One start reported by node `node`. */
  add(node: number, scheduleId: string, fireTime: number | null, startedAt: number): void {
    const fire = fireTime ?? this.fireAt;
    const key = `${scheduleId}@${fire}`;
    const seen = (this.starts.get(key) ?? 0) + 1;
    this.starts.set(key, seen);
    if (seen > 1) {
      this.duplicates++;
      return;
    }
    const m = /^u(\d+)$/.exec(scheduleId);
    const w = this.warm;
    if (w && m && fire === w.at && Number(m[1]) >= w.from && Number(m[1]) < w.from + w.count) {
      this.warmFirst.add(scheduleId);
      return;
    }
    if (fire !== this.fireAt || !m || Number(m[1]) >= this.due) {
      this.unexpected++;
      return;
    }
    this.first.set(scheduleId, { at: startedAt, node });
  }

  get started(): number {
    return this.first.size;
  }

  complete(): boolean {
    return this.first.size >= this.due;
  }

  /**
   * The starts so far; with `until` (host ms) only the occurrences first started by then — a busy
   * node reports its starts late, each with its own start time, so a deadline is applied to those
   * times, not to when they arrived.
   */
  summary(until = Number.POSITIVE_INFINITY): LedgerSummary {
    const firsts = [...this.first.values()].filter((f) => f.at <= until);
    const lateness = Float64Array.from(firsts, (f) => f.at - this.fireAt);
    let max = Number.NaN;
    for (const l of lateness) if (!(l <= max)) max = l;
    const perNode = new Map<number, number>();
    for (const f of firsts) perNode.set(f.node, (perNode.get(f.node) ?? 0) + 1);
    return {
      due: this.due,
      started: firsts.length,
      duplicates: this.duplicates,
      unexpected: this.unexpected,
      p50: quantile(lateness, 0.5),
      p99: quantile(lateness, 0.99),
      max,
      perNode: new Map([...perNode].sort((a, b) => a[0] - b[0])),
    };
  }
}
