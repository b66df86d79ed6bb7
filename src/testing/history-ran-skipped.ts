/** The checker's "a fire time said missed did not run" part (see history-check.ts). */

import type { CheckInput, CheckResult, RunRecord } from './history-model.js';
import { occurrenceKey, skipCovers } from './history-model.js';

/** Sources whose run is of the trigger's own fire time (a manual trigger's occurrence is its own). */
const OF_TRIGGER: ReadonlySet<RunRecord['source']> = new Set(['schedule', 'misfire', 'recover', 'retry']);

/**
 * `ran-and-skipped`: an occurrence that started (on time, as a replay, a recovery or a retry) while
 * a `misfire` skip on record covers its fire time — the log says the 10:00 report was not sent,
 * and it was. "Missed" means nobody claimed it, on the store's order of events; a node that says
 * it after another node's claim contradicts the history. An occurrence that also has a `backfill`
 * start is not judged: a backfill runs skipped fire times on purpose, and a recovery of that run
 * is `recover`.
 */
export function checkRanAndSkipped(
  input: CheckInput,
  byOccurrence: ReadonlyMap<string, { starts: readonly RunRecord[] }>,
  result: CheckResult,
): void {
  const misfires = (input.skips ?? []).filter((s) => s.reason === 'misfire');
  if (misfires.length === 0) return;
  const iso = (ms: number) => new Date(ms).toISOString();
  for (const { starts } of byOccurrence.values()) {
    if (starts.some((r) => r.source === 'backfill')) continue;
    const run = starts.find((r) => OF_TRIGGER.has(r.source));
    if (run === undefined) continue;
    const skip = misfires.find((s) => skipCovers(s, run));
    if (skip === undefined) continue;
    result.violations.push({
      kind: 'ran-and-skipped',
      occurrence: occurrenceKey(run),
      message: `${occurrenceKey(run)}: started (attempt ${run.attempt}, token ${run.token}, ${run.source}, on ${run.node} at ${iso(run.at)}), and a misfire skip on record says it was missed (${iso(skip.from)} to ${iso(skip.to)})`,
    });
  }
}
