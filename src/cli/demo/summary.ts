/**
 * The demo's verdict, counted from the ledger (what handlers actually completed) and the store's
 * history (what the scheduler recorded as skipped), against the fire times the job definitions
 * imply. Pure: no I/O, so the maths can be read and tested on its own.
 */
import { fireTimes } from '../../schedule/fire-times.js';
import { type LedgerEntry, occurrenceKey } from './ledger.js';
import { clockTime, type Style } from './live-view.js';
import { DEMO_JOBS, type DemoJob } from './sample-jobs.js';

/** The demo's verdict in numbers; `duplicates` must be 0. */
export interface DemoSummary {
  occurrences: number;
  duplicates: number;
  misses: number;
  recoveries: number;
  runsPerNode: Record<string, number>;
}

export interface Occurrence {
  job: string;
  fireTime: number;
  shard: number | null;
}

export interface SummaryInput {
  ledger: readonly LedgerEntry[];
  /** History records with status `skipped` (overlap: a run of the job was still going). */
  skipped: readonly Occurrence[];
  /**
   * Fire times a node reported as skipped by the misfire policy (explains a miss; still counted):
   * `fireTime`, or every one from `firstFireTime` to `fireTime` (one report per stretch).
   */
  misfireSkipped: readonly { job: string; fireTime: number; firstFireTime?: number }[];
  nodes: readonly string[];
  /**
   * Fire times checked for misses: strictly after `from`, up to and including `to` (epoch ms).
   * `from` is when every node was up; `to` is shutdown minus an allowance (see demo.ts).
   */
  window: { from: number; to: number };
  jobs?: readonly DemoJob[];
}

export interface SummaryDetails {
  summary: DemoSummary;
  /** Completed occurrences per job. */
  perJob: Record<string, number>;
  /** Occurrences skipped for overlap (history), in all and within `window`. */
  skippedForOverlap: number;
  skippedInWindow: number;
  /** Completed occurrences whose fire time is within `window` (the rest fell due outside it). */
  ranInWindow: number;
  /** Occurrences due within `window`: ranInWindow + skippedInWindow + misses. */
  expected: number;
  missing: Occurrence[];
  /** Missing occurrences the misfire policy skipped (a subset of `missing`). */
  missingByMisfire: number;
  duplicated: { occurrence: Occurrence; runs: LedgerEntry[] }[];
  recovered: LedgerEntry[];
  window: { from: number; to: number };
}

/** Every occurrence of `job` whose fire time is in `(from, to]`: one per shard. */
export function expectedOccurrences(job: DemoJob, from: number, to: number): Occurrence[] {
  if (to <= from) return [];
  const count = Math.min(10_000, Math.floor((to - from) / job.everyMs) + 1);
  const shards = job.shards === undefined ? [null] : Array.from({ length: job.shards }, (_, i) => i);
  return fireTimes({ every: job.everyMs }, { after: from, count })
    .map((d) => d.getTime())
    .filter((f) => f <= to)
    .flatMap((fireTime) => shards.map((shard) => ({ job: job.name, fireTime, shard })));
}

export function summarize(input: SummaryInput): SummaryDetails {
  const jobs = input.jobs ?? DEMO_JOBS;
  const byOccurrence = new Map<string, LedgerEntry[]>();
  const runsPerNode: Record<string, number> = Object.fromEntries(input.nodes.map((n) => [n, 0]));
  const perJob: Record<string, number> = Object.fromEntries(jobs.map((j) => [j.name, 0]));
  for (const e of input.ledger) {
    const key = occurrenceKey(e.job, e.fireTime, e.shard);
    const runs = byOccurrence.get(key);
    if (runs) runs.push(e);
    else {
      byOccurrence.set(key, [e]);
      perJob[e.job] = (perJob[e.job] ?? 0) + 1;
    }
    runsPerNode[e.node] = (runsPerNode[e.node] ?? 0) + 1;
  }
  const duplicated = [...byOccurrence.values()]
    .filter((runs) => runs.length > 1)
    .map((runs) => ({
      occurrence: { job: runs[0]!.job, fireTime: runs[0]!.fireTime, shard: runs[0]!.shard },
      runs,
    }));

  // Misses. Not expected, so never counted as missed:
  // - fire times at or before `from` (before every node was up: a job only starts firing once a
  //   node defining it runs, and a brand-new job does not backfill the past) and after `to` (too
  //   close to shutdown: a node stops claiming on SIGTERM, and what fired just before may not have
  //   been claimed yet);
  // - occurrences recorded as `skipped` in the history: overlap 'skip' decided, fleet-wide, not to
  //   run them because the previous run of the job (slow-report) was still going — or still held by
  //   a killed node until its lease ran out. They were handled, on purpose, and say so in history.
  // Everything else in the window must have a completed run. A fire time the misfire policy skipped
  // (no node claimed it within misfireThreshold) is still a miss, but is named as such.
  const skippedKeys = new Set(input.skipped.map((s) => occurrenceKey(s.job, s.fireTime, s.shard)));
  const misfiredAt = (job: string, fireTime: number) =>
    input.misfireSkipped.some(
      (m) => m.job === job && fireTime <= m.fireTime && fireTime >= (m.firstFireTime ?? m.fireTime),
    );
  const expected = jobs.flatMap((j) => expectedOccurrences(j, input.window.from, input.window.to));
  const missing = expected.filter((o) => {
    const key = occurrenceKey(o.job, o.fireTime, o.shard);
    return !byOccurrence.has(key) && !skippedKeys.has(key);
  });
  const missingByMisfire = missing.filter((o) => misfiredAt(o.job, o.fireTime)).length;
  const keysDue = expected.map((o) => occurrenceKey(o.job, o.fireTime, o.shard));
  const ranInWindow = keysDue.filter((k) => byOccurrence.has(k)).length;
  const skippedInWindow = keysDue.filter((k) => !byOccurrence.has(k) && skippedKeys.has(k)).length;

  const recovered = input.ledger.filter((e) => e.source === 'recover');
  return {
    summary: {
      occurrences: byOccurrence.size,
      duplicates: duplicated.length,
      misses: missing.length,
      recoveries: recovered.length,
      runsPerNode,
    },
    perJob,
    skippedForOverlap: skippedKeys.size,
    skippedInWindow,
    ranInWindow,
    expected: expected.length,
    missing,
    missingByMisfire,
    duplicated,
    recovered,
    window: input.window,
  };
}

/** What the summary block says about a killed node, filled in by the orchestration. */
export interface KillReport {
  node: string;
  /** Runs the node had going when it died. */
  runs: { job: string; fireTime: number; shard: number | null; token: number }[];
}

/** The summary block printed at the end of the demo. */
export function formatSummary(d: SummaryDetails, style: Style, kill: KillReport | undefined): string[] {
  const s = d.summary;
  const label = (text: string) => text.padEnd(16);
  const lines: string[] = [
    '',
    style.bold('── summary ─────────────────────────────────────────────────────────'),
  ];
  const jobs = Object.entries(d.perJob)
    .map(([job, n]) => `${job} ${n}`)
    .join(', ');
  const window = `${clockTime(d.window.from)}–${clockTime(d.window.to)} UTC`;
  // Every count says what it counts: `ran` and `skipped` are all of them, the `due` line is the
  // window checked for misses, and its parts add up to it.
  const outside = s.occurrences - d.ranInWindow;
  lines.push(
    `${label('ran')}${String(s.occurrences).padStart(4)}   occurrences, each by one node (${jobs})${outside > 0 ? `; ${outside} of them fell due outside the window below (while the nodes started, or stopped)` : ''}`,
  );
  const skippedOutside = d.skippedForOverlap - d.skippedInWindow;
  lines.push(
    `${label('skipped')}${String(d.skippedForOverlap).padStart(4)}   fire times skipped fleet-wide while the previous run was still going (overlap: skip)${skippedOutside > 0 ? `; ${skippedOutside} of them outside the window below` : ''}`,
  );
  const item = (o: Occurrence) =>
    `${o.job.padEnd(12)} ${clockTime(o.fireTime)}${o.shard === null ? '' : ` shard ${o.shard}`}`;
  if (kill) {
    lines.push(
      `${label('killed')}       ${style.node(kill.node)} by SIGKILL${kill.runs.length > 0 ? ', in the middle of:' : ''}`,
    );
    for (const r of kill.runs) lines.push(`${' '.repeat(25)}${item(r)}  token ${r.token}`);
  }
  lines.push(
    `${label('recoveries')}${String(s.recoveries).padStart(4)}   ${d.recovered.length > 0 ? 're-run once each, with a higher token, by a live node (the killed one counts once restarted):' : 'none'}`,
  );
  for (const e of d.recovered) {
    const dead = kill?.runs.find((r) => r.job === e.job && r.fireTime === e.fireTime && r.shard === e.shard);
    lines.push(
      `${' '.repeat(25)}${item(e)}  token ${e.token}${dead ? ` > ${dead.token}` : ''}, attempt ${e.attempt}, on ${style.node(e.node)}`,
    );
  }
  lines.push(
    `${label('due')}${String(d.expected).padStart(4)}   occurrences fell due between ${window}, every node up: ${d.ranInWindow} ran + ${d.skippedInWindow} skipped + ${s.misses} missed`,
  );
  let misses = `of the ${d.expected} due`;
  if (s.misses > 0) {
    const shown = d.missing
      .slice(0, 5)
      .map((o) => `${o.job} ${clockTime(o.fireTime)}${o.shard === null ? '' : ` shard ${o.shard}`}`);
    misses += ` — not run: ${shown.join(', ')}${d.missing.length > 5 ? ', …' : ''}`;
    if (d.missingByMisfire > 0) misses += ` (${d.missingByMisfire} skipped by the misfire policy)`;
  }
  lines.push(`${label('misses')}${String(s.misses).padStart(4)}   ${misses}`);
  const perNode = Object.entries(s.runsPerNode)
    .map(([node, n]) => `${style.node(node)} ${n}`)
    .join(' · ');
  lines.push(`${label('runs per node')}       ${perNode}`);
  if (s.duplicates === 0) {
    lines.push(
      style.green(
        style.bold(
          `${label('duplicates')}   0 ✓ no occurrence ran twice${kill ? ', though a node was killed mid-run' : ''}`,
        ),
      ),
    );
  } else {
    lines.push(
      style.red(
        `${label('duplicates')}${String(s.duplicates).padStart(4)} ✗ DUPLICATES: these occurrences ran more than once:`,
      ),
    );
    for (const { occurrence: o, runs } of d.duplicated.slice(0, 10)) {
      const who = runs
        .map((r) => `${r.node} (attempt ${r.attempt}, token ${r.token}, ${r.source})`)
        .join(', ');
      lines.push(
        style.red(
          `  ${o.job} ${clockTime(o.fireTime)}${o.shard === null ? '' : ` shard ${o.shard}`}: ${who}`,
        ),
      );
    }
  }
  return lines;
}
