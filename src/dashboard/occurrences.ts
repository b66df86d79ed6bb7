import type { HistoryEntry } from '../scheduler/types.js';

/** The attempts of one occurrence `(fireTime, schedule, shard)`, newest attempt first. */
export interface Occurrence {
  id: string;
  fireTime: Date;
  scheduleId: string | undefined;
  shard: number | undefined;
  attempts: HistoryEntry[];
}

/** Groups history (newest fire time first, attempts descending) into occurrences. */
export function occurrences(history: readonly HistoryEntry[]): Occurrence[] {
  const out: Occurrence[] = [];
  const byKey = new Map<string, Occurrence>();
  for (const e of history) {
    const key = `${e.fireTime.getTime()}|${e.scheduleId ?? ''}|${e.shard ?? ''}`;
    let occ = byKey.get(key);
    if (!occ) {
      occ = {
        id: `occ-${out.length + 1}`,
        fireTime: e.fireTime,
        scheduleId: e.scheduleId,
        shard: e.shard,
        attempts: [],
      };
      byKey.set(key, occ);
      out.push(occ);
    }
    occ.attempts.push(e);
  }
  for (const o of out) o.attempts.sort((a, b) => b.attempt - a.attempt);
  return out;
}

/** What the jobs list counts of a job's recent history. */
export interface RunCounts {
  /** Occurrences whose last attempt succeeded (on a retry or not). */
  succeeded: number;
  /** Occurrences whose last attempt failed or timed out. */
  failed: number;
  /** Attempts after an occurrence's first (retries and recoveries), whatever their outcome. */
  retries: number;
}

/**
 * Counts occurrences, not history records: a run that failed twice and then succeeded is one
 * success (and two retries), where counting records said `1 ✓ · 2 ✗`.
 *
 * @example
 * runCounts(history); // { succeeded: 6, failed: 0, retries: 6 }
 */
export function runCounts(history: readonly HistoryEntry[]): RunCounts {
  const counts: RunCounts = { succeeded: 0, failed: 0, retries: 0 };
  for (const o of occurrences(history)) {
    const last = o.attempts[0]!;
    if (last.status === 'succeeded') counts.succeeded++;
    else if (last.status === 'failed' || last.status === 'timed-out') counts.failed++;
    counts.retries += o.attempts.filter((a) => a.attempt > 1).length;
  }
  return counts;
}
