/**
 * `oncely demo`: three scheduler nodes — separate processes — share one SQLite file and run the
 * same sample jobs. The demo shows live which node ran each occurrence, SIGKILLs the node running
 * `slow-report` halfway through and restarts it, and ends with the verdict: occurrences, misses,
 * recoveries and duplicates (which must be 0).
 *
 * The evidence is the ledger (node-process.ts appends one line per completed handler run) and
 * the store's history; node messages only drive the live view and the timing of the kill.
 */

import { rmSync } from 'node:fs';
import { systemClock } from '../../core/clock.js';
import { createScheduler } from '../../scheduler/scheduler.js';
import { openStore } from '../../store/open.js';
import type { Store } from '../../store/types.js';
import { prepareDemoDir } from './demo-dir.js';
import { checkDemoOptions, type DemoOptions } from './demo-options.js';
import { NodeFleet } from './fleet.js';
import { killAndRestart, RESTART_AFTER_MS, RESTART_READY_WAIT_MS } from './kill-and-restart.js';
import { LedgerReader } from './ledger.js';
import { LiveView } from './live-view.js';
import { nodeEntryPath } from './node-entry.js';
import { describeRun, RunTracker } from './run-tracker.js';
import {
  DEMO_JOBS,
  KILL_TARGET_JOB,
  LOCK_AT_MOST_FOR_MS,
  MISFIRE_THRESHOLD_MS,
  POLL_INTERVAL_MS,
  WIND_DOWN_MS,
} from './sample-jobs.js';
import { type DemoSummary, formatSummary, type Occurrence, summarize } from './summary.js';

export { type DemoOptions, MIN_DEMO_DURATION_MS } from './demo-options.js';
export { nodeEntryPath } from './node-entry.js';
export type { DemoSummary } from './summary.js';

/** Fire times this close to shutdown are not checked for misses (see summary.ts). */
const END_ALLOWANCE_MS = MISFIRE_THRESHOLD_MS;
const VIEW_REFRESH_MS = 250;

/**
 * Runs the demo and returns its verdict; `duplicates` must be 0. Ctrl-C (SIGINT) ends it early
 * with the summary of what ran so far; a second Ctrl-C kills the nodes at once.
 *
 * @example
 * const summary = await runDemo({ durationMs: 30_000 });
 * process.exitCode = summary.duplicates === 0 ? 0 : 1;
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoSummary> {
  const { durationMs, nodeCount } = checkDemoOptions(options);
  const entry = nodeEntryPath();
  const out = options.out ?? process.stdout;
  const names = Array.from({ length: nodeCount }, (_, i) => `node-${i + 1}`);
  const { dir, ownDir, dbPath, ledgerPath } = prepareDemoDir(options.dir, names);

  const t0 = performance.now();
  const view = new LiveView(out, durationMs, names, t0);
  const { style } = view;
  const interrupted = new AbortController();
  const shuttingDown = new AbortController();
  const tracker = new RunTracker(view, new LedgerReader(ledgerPath));
  const fleet = new NodeFleet({
    entry,
    dir,
    dbPath,
    ledgerPath,
    names,
    view,
    onMessage: (h, m) => tracker.onMessage(h, m),
  });
  const { killAll } = fleet;

  let interrupts = 0;
  const onSigint = () => {
    interrupts++;
    if (interrupts === 1) {
      view.event(style.yellow('interrupted: stopping early (Ctrl-C again kills the nodes at once)'));
      interrupted.abort();
    } else {
      killAll();
    }
  };
  process.on('SIGINT', onSigint);
  process.on('exit', killAll);

  let ticker: NodeJS.Timeout | undefined;
  let store: Store | undefined;
  try {
    // Creates the schema once, so the nodes start on equal terms; kept open to read the history.
    store = await openStore(`sqlite:${dbPath}`);
    view.plain(
      style.bold(
        `oncely demo — ${nodeCount} nodes (separate processes) share one SQLite file and run the same jobs.`,
      ),
    );
    view.plain(
      'Every occurrence (job, fire time, shard) must run exactly once, on whichever node claims it.',
    );
    view.plain(`${style.dim('  store ')} sqlite:${dbPath}`);
    for (const [i, job] of DEMO_JOBS.entries())
      view.plain(`${style.dim(i === 0 ? '  jobs  ' : '        ')} ${job.name.padEnd(12)} ${job.blurb}`);
    view.plain(
      `${style.dim('  plan  ')} ${durationMs / 1000}s at most; halfway, SIGKILL the node running ${KILL_TARGET_JOB} and restart it ${RESTART_AFTER_MS / 1000}s later; at ${(durationMs - WIND_DOWN_MS) / 1000}s, stop the nodes (their running jobs finish)`,
    );
    view.plain();

    // ── start ──────────────────────────────────────────────────────────────────────────────
    await fleet.startAll(interrupted.signal);
    const readyAt = Date.now();
    const readyPerf = performance.now();
    view.event(
      `${names.map((n) => style.node(n)).join(', ')} are up (pids ${[...fleet.current.values()].map((h) => h.child.pid).join(', ')})`,
    );
    view.columns();
    ticker = setInterval(() => {
      tracker.readLedger();
      view.progress({
        elapsedMs: performance.now() - t0,
        runs: tracker.ledgerEntries.length,
        alive: fleet.alive(),
      });
    }, VIEW_REFRESH_MS);

    // ── kill one node halfway, restart it ─────────────────────────────────────────────────
    // The demo takes what it says: new work is claimed until WIND_DOWN_MS before the end, which
    // leaves the nodes the time to let their running jobs finish and exit.
    const endAt = t0 + durationMs - WIND_DOWN_MS;
    const killTask = killAndRestart({
      t0,
      readyPerf,
      endAt,
      durationMs,
      fleet,
      tracker,
      view,
      interrupted: interrupted.signal,
      shuttingDown: shuttingDown.signal,
    });

    await systemClock.sleep(endAt - performance.now(), interrupted.signal);
    await killTask.done;
    // The killed node's runs must be recovered before the end, or the demo would not show it.
    if (tracker.pendingRecoveries().length > 0 && !interrupted.signal.aborted) {
      view.event(
        style.dim(`waiting for the recovery of ${tracker.pendingRecoveries().map(describeRun).join(', ')}…`),
      );
      // Normally over before `endAt` (the kill is planned so); this wait is for a slow machine.
      const deadline = performance.now() + LOCK_AT_MOST_FOR_MS + 10 * POLL_INTERVAL_MS + 3_000;
      while (
        tracker.pendingRecoveries().length > 0 &&
        !interrupted.signal.aborted &&
        performance.now() < deadline
      )
        await systemClock.sleep(50, interrupted.signal);
    }

    // ── stop ─────────────────────────────────────────────────────────────────────────────
    // The restart begins before `endAt` (a kill is at latest 3.5 s before it, the restart 3 s
    // after the kill), but a loaded machine can take seconds to bring the process up: the demo
    // promised the restart, so it waits for it a bounded while before shutting down.
    if (!interrupted.signal.aborted)
      await Promise.race([killTask.restart, systemClock.sleep(RESTART_READY_WAIT_MS, interrupted.signal)]);
    shuttingDown.abort();
    await killTask.restart;
    const shutdownAt = Date.now();
    await fleet.stop();
    clearInterval(ticker);
    ticker = undefined;
    tracker.readLedger();
    view.finish();

    // ── verdict ──────────────────────────────────────────────────────────────────────────
    const viewer = createScheduler({ store, node: 'oncely-demo' });
    const history = await Promise.all(DEMO_JOBS.map((j) => viewer.history({ job: j.name, limit: 10_000 })));
    const skipped: Occurrence[] = history
      .flat()
      .filter((h) => h.status === 'skipped')
      .map((h) => ({ job: h.job, fireTime: h.fireTime.getTime(), shard: h.shard ?? null }));
    const details = summarize({
      ledger: tracker.ledgerEntries,
      skipped,
      misfireSkipped: tracker.misfireSkipped,
      nodes: names,
      window: { from: readyAt, to: shutdownAt - END_ALLOWANCE_MS },
    });
    for (const line of formatSummary(details, style, tracker.kill)) view.plain(line);
    if (!ownDir) view.plain(style.dim(`files kept in ${dir}`));
    return details.summary;
  } finally {
    if (ticker) clearInterval(ticker);
    view.finish();
    shuttingDown.abort();
    killAll();
    await Promise.all(fleet.all.map((h) => h.exit));
    await store?.close().catch(() => {});
    process.off('SIGINT', onSigint);
    process.off('exit', killAll);
    if (ownDir) rmSync(dir, { recursive: true, force: true });
  }
}
