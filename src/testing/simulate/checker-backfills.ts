/**
 * The checker's judgement of `scheduler.backfill()` calls (docs/backfill.md), on the runs the
 * simulation saw:
 * - `unexpected-fire-time`: a run with source `backfill` at a fire time that no backfill call of
 *   its trigger covers (its trigger's fire times in [from, to) before the store's clock at the
 *   call minus the misfire threshold and jitter: `CheckedBackfill.fireTimes`).
 * - `backfill-rerun`: a backfill run of a fire time that had run — an earlier run of the
 *   occurrence, of any source, whose attempt is not on record as `abandoned` (a dead attempt
 *   closed without a run: docs/backfill.md counts it as not run) —, or a fresh run (not a retry,
 *   not a recovery) of a fire time after its backfill run. Each fire time runs once.
 * - with the liveness checks, for a `judged` call: `lost-fire-time`, a fire time it covers that
 *   never ran at all by the end (one that had not run must have been run by the backfill, or by
 *   the misfire policy first: either way, once — one queued behind its overlap gate at the call
 *   had not run, and a skip on record there, superseded, does not excuse it); `unfinished`, as for
 *   any fire time.
 */
import { type CheckedJob, streamOf, type Violation } from './checker-types.js';
import { type History, type Invocation, occKey } from './history.js';

const at = (ms: number) => `${(ms / 1000).toFixed(3)}s`;
const iso = (ms: number) => new Date(ms).toISOString();

/** Whether the store holds `inv`'s attempt as abandoned: it did not run the fire time. */
function abandoned(history: History, inv: Invocation): boolean {
  return history.abandoned.has(`${inv.occ}|${inv.attempt}`);
}

const describe = (inv: Invocation) =>
  `${inv.node} (token ${inv.token}, attempt ${inv.attempt}, source ${inv.source}) at ${at(inv.startedAt)}`;

/** Backfill runs only at covered fire times, and each fire time run once (see the file comment). */
export function checkBackfillRuns(
  history: History,
  jobs: readonly CheckedJob[],
  byOcc: ReadonlyMap<string, Invocation[]>,
  violations: Violation[],
): void {
  const covered = new Map<string, Set<number>>();
  for (const job of jobs)
    for (const b of job.backfills ?? []) {
      const stream = streamOf(job.name, b.scheduleId);
      const times = covered.get(stream) ?? new Set<number>();
      for (const f of b.fireTimes) times.add(f);
      covered.set(stream, times);
    }
  for (const [occ, runs] of byOcc) {
    if (!runs.some((r) => r.source === 'backfill')) continue;
    const ordered = [...runs].sort((a, b) => a.startedAt - b.startedAt || a.token - b.token);
    const first = ordered.find((r) => r.source === 'backfill')!;
    if (!covered.get(streamOf(first.job, first.scheduleId))?.has(first.fireTime))
      violations.push({
        kind: 'unexpected-fire-time',
        occ,
        message: `${describe(first)} ran it as a backfill, but no backfill call of its trigger covers this fire time`,
      });
    for (let k = 1; k < ordered.length; k++) {
      const r = ordered[k]!;
      const before = ordered.slice(0, k).filter((x) => !abandoned(history, x));
      const ran =
        r.source === 'backfill'
          ? before[0]
          : r.source === 'retry' || r.source === 'recover'
            ? undefined
            : before.find((x) => x.source === 'backfill');
      if (ran === undefined) continue;
      violations.push({
        kind: 'backfill-rerun',
        occ,
        message:
          r.source === 'backfill'
            ? `${describe(r)} ran it as a backfill, but it had run: ${describe(ran)}`
            : `${describe(r)} ran it again after its backfill run: ${describe(ran)}`,
      });
      break;
    }
  }
}

/** With the liveness checks: every fire time a judged backfill covers has run, and finished (see the file comment). */
export function checkBackfillLiveness(
  history: History,
  jobs: readonly CheckedJob[],
  byOcc: ReadonlyMap<string, Invocation[]>,
  violations: Violation[],
): void {
  const reported = new Set(violations.map((v) => `${v.kind}|${v.occ}`));
  const report = (v: Violation) => {
    if (reported.has(`${v.kind}|${v.occ}`)) return;
    reported.add(`${v.kind}|${v.occ}`);
    violations.push(v);
  };
  for (const job of jobs)
    for (const b of job.backfills ?? []) {
      if (!b.judged) continue;
      const call = `backfill() at ${at(b.at)} of [${iso(b.from)}, ${iso(b.to)})`;
      for (const fireTime of b.fireTimes)
        for (const shard of job.shards) {
          const occ = occKey(job.name, fireTime, shard, b.scheduleId);
          const runs = byOcc.get(occ);
          if (runs === undefined) {
            report({
              kind: 'lost-fire-time',
              occ,
              message: `${call} covers it, yet it never ran: had it run, the backfill was to leave it; had it not, to run it once`,
            });
          } else if (
            job.mustFinish &&
            !history.stored.has(occ) &&
            Math.min(...runs.map((r) => r.startedAt)) <= (job.finishBy ?? Number.POSITIVE_INFINITY)
          ) {
            report({
              kind: 'unfinished',
              occ,
              message: `${call} covers it; it started but was never stored as succeeded (recover is on and the handler never fails)`,
            });
          }
        }
    }
}
