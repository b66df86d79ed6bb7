/**
 * `oncely demo`: three scheduler nodes — separate processes — share one SQLite file and run the
 * same sample jobs. The demo shows live which node ran each occurrence, SIGKILLs the node running
 * `slow-report` halfway through and restarts it, and ends with the verdict: occurrences, misses,
 * recoveries and duplicates (which must be 0).
 *
 * The evidence is the ledger (node-process.ts appends one line per completed handler run) and
 * the store's history; node messages only drive the live view and the timing of the kill.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { systemClock } from '../../core/clock.js';
import { invalidArgument, OncelyError } from '../../core/errors.js';
import { createScheduler } from '../../scheduler/scheduler.js';
import { openStore } from '../../store/open.js';
import type { Store } from '../../store/types.js';
import { type LedgerEntry, LedgerReader, occurrenceKey } from './ledger.js';
import { clockTime, LiveView } from './live-view.js';
import type { NodeMessage, ParentMessage, RunInfo } from './protocol.js';
import {
  DEMO_JOBS,
  KILL_TARGET_JOB,
  LOCK_AT_MOST_FOR_MS,
  MISFIRE_THRESHOLD_MS,
  POLL_INTERVAL_MS,
  STOP_TIMEOUT_MS,
} from './sample-jobs.js';
import { formatSummary, type Occurrence, summarize } from './summary.js';

export interface DemoOptions {
  /** How long the demo runs, ms (default 30 s). */
  durationMs?: number;
  /** Number of node processes (default 3). */
  nodes?: number;
  /** Directory for the SQLite file and logs (default: a new temp dir, removed afterwards). */
  dir?: string;
  /** Where the live view and summary go (default process.stdout). */
  out?: NodeJS.WritableStream;
}

export interface DemoSummary {
  occurrences: number;
  duplicates: number;
  misses: number;
  recoveries: number;
  runsPerNode: Record<string, number>;
}

export const MIN_DEMO_DURATION_MS = 12_000;
/** Fire times this close to shutdown are not checked for misses (see summary.ts). */
const END_ALLOWANCE_MS = MISFIRE_THRESHOLD_MS;
/** How long the killed node stays down. */
const RESTART_AFTER_MS = 3_000;
const VIEW_REFRESH_MS = 250;
const STARTUP_TIMEOUT_MS = 30_000;
const NODE_ENTRY = 'node-process.js';
/** Files the demo creates in its directory (removed first when `dir` is given and reused). */
const DB_FILE = 'demo.db';
const LEDGER_FILE = 'ledger.jsonl';

/**
 * The compiled node entry: next to this module in `dist/` (also in an installed package); when
 * this module runs from `src/` (tests via vitest), the repo's `dist/` build of it.
 */
export function nodeEntryPath(): string {
  const here = import.meta.url;
  const sibling = fileURLToPath(new URL(`./${NODE_ENTRY}`, here));
  if (!here.endsWith('.ts')) {
    if (existsSync(sibling)) return sibling;
    throw new OncelyError(
      'INTERNAL',
      `oncely demo: ${sibling} is missing; reinstall oncely or run npm run build`,
    );
  }
  const built = fileURLToPath(new URL(`../../../dist/cli/demo/${NODE_ENTRY}`, here));
  if (existsSync(built)) return built;
  throw new OncelyError(
    'INTERNAL',
    `oncely demo: the compiled node entry ${built} is missing; run npm run build (the nodes are separate Node.js processes and run compiled JavaScript)`,
  );
}

interface NodeHandle {
  name: string;
  child: ChildProcess;
  logPath: string;
  ready: boolean;
  exited: boolean;
  /** Stopped or killed by the demo: its exit is no surprise. */
  expectedExit: boolean;
  exit: Promise<void>;
}

/** A run that was going on the killed node. */
type DeadRun = RunInfo & { node: string };

interface ActiveRun {
  node: string;
  run: RunInfo;
  /** `performance.now()` when the parent heard of its start. */
  heardAt: number;
}

function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return systemClock.sleep(ms, signal);
}

function tail(path: string, lines: number): string[] {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines);
  } catch {
    return [];
  }
}

function runKey(job: string, fireTime: number, shard: number | null, token: number): string {
  return `${occurrenceKey(job, fireTime, shard)}#${token}`;
}

function describeRun(r: { job: string; fireTime: number; shard: number | null }): string {
  return `${r.job} ${clockTime(r.fireTime)}${r.shard === null ? '' : ` shard ${r.shard}`}`;
}

/**
 * Runs the demo and returns its verdict; `duplicates` must be 0. Ctrl-C (SIGINT) ends it early
 * with the summary of what ran so far; a second Ctrl-C kills the nodes at once.
 *
 * @example
 * const summary = await runDemo({ durationMs: 30_000 });
 * process.exitCode = summary.duplicates === 0 ? 0 : 1;
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoSummary> {
  const durationMs = options.durationMs ?? 30_000;
  const nodeCount = options.nodes ?? 3;
  if (!Number.isFinite(durationMs) || durationMs < MIN_DEMO_DURATION_MS || durationMs > 3_600_000) {
    throw invalidArgument(
      `demo duration must be from ${MIN_DEMO_DURATION_MS / 1000}s to 1h (a node is killed halfway and must be recovered before the end); got ${durationMs} ms`,
    );
  }
  if (!Number.isInteger(nodeCount) || nodeCount < 2 || nodeCount > 10) {
    throw invalidArgument(`demo nodes must be a whole number from 2 to 10; got ${nodeCount}`);
  }
  const entry = nodeEntryPath();
  const out = options.out ?? process.stdout;
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'oncely-demo-'));
  const names = Array.from({ length: nodeCount }, (_, i) => `node-${i + 1}`);
  if (!ownDir) {
    mkdirSync(dir, { recursive: true });
    for (const f of [
      DB_FILE,
      `${DB_FILE}-wal`,
      `${DB_FILE}-shm`,
      LEDGER_FILE,
      ...names.map((n) => `${n}.log`),
    ])
      rmSync(join(dir, f), { force: true });
  }
  const dbPath = join(dir, DB_FILE);
  const ledgerPath = join(dir, LEDGER_FILE);
  closeSync(openSync(ledgerPath, 'a'));

  const t0 = performance.now();
  const view = new LiveView(out, durationMs, names, t0);
  const { style } = view;
  const interrupted = new AbortController();
  const shuttingDown = new AbortController();
  const all: NodeHandle[] = [];
  const current = new Map<string, NodeHandle>();
  const active = new Map<string, ActiveRun>();
  const recoveriesStarted = new Set<string>();
  const completed = new Set<string>();
  const shownSkips = new Set<string>();
  const misfireSkipped: { job: string; fireTime: number; firstFireTime?: number }[] = [];
  const ledgerEntries: LedgerEntry[] = [];
  const crashAnswers = new Map<string, () => void>();
  let errorsShown = 0;
  let kill: { node: string; runs: DeadRun[] } | undefined;

  const killAll = () => {
    for (const h of all) {
      if (h.exited) continue;
      h.expectedExit = true;
      try {
        h.child.kill('SIGKILL');
      } catch {}
    }
  };
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

  const onMessage = (h: NodeHandle, m: NodeMessage) => {
    switch (m.type) {
      case 'ready':
        h.ready = true;
        return;
      case 'started': {
        const { run } = m;
        active.set(runKey(run.job, run.fireTime, run.shard, run.token), {
          node: m.node,
          run,
          heardAt: performance.now(),
        });
        if (run.source === 'recover') {
          recoveriesStarted.add(occurrenceKey(run.job, run.fireTime, run.shard));
          const dead = kill?.runs.find(
            (r) => r.job === run.job && r.fireTime === run.fireTime && r.shard === run.shard,
          );
          view.event(
            `${style.yellow('↻')} ${style.node(m.node)} ${style.yellow(`recovers ${describeRun(run)} (attempt ${run.attempt}, token ${run.token}${dead ? ` > ${dead.token}` : ''})`)}`,
          );
        }
        return;
      }
      case 'succeeded':
        active.delete(runKey(m.run.job, m.run.fireTime, m.run.shard, m.run.token));
        return;
      case 'failed':
        active.delete(runKey(m.run.job, m.run.fireTime, m.run.shard, m.run.token));
        view.event(style.red(`${describeRun(m.run)} failed on ${m.node}: ${m.error}`));
        return;
      case 'skipped': {
        const key = occurrenceKey(m.job, m.fireTime, m.shard);
        if (shownSkips.has(key)) return;
        shownSkips.add(key);
        view.skipped(m.job, m.fireTime, m.shard);
        return;
      }
      case 'misfired':
        if (m.action === 'skipped')
          misfireSkipped.push({ job: m.job, fireTime: m.fireTime, firstFireTime: m.firstFireTime });
        view.misfired(m.job, m.fireTime, m.action, m.count);
        return;
      case 'error':
        // A busy store is retried by the scheduler; say so, but do not flood the view.
        if (errorsShown++ < 5) view.event(style.dim(`${m.node}: ${m.during} failed (retried): ${m.error}`));
        return;
      case 'crash-declined':
        crashAnswers.get(m.node)?.();
        return;
    }
  };

  const startNode = (name: string): NodeHandle => {
    const logPath = join(dir, `${name}.log`);
    const log = openSync(logPath, 'a');
    let child: ChildProcess;
    try {
      const args = ['--node', name, '--db', dbPath, '--ledger', ledgerPath];
      args.push('--index', String(names.indexOf(name)), '--count', String(names.length));
      child = spawn(process.execPath, [entry, ...args], {
        stdio: ['ignore', log, log, 'ipc'],
        windowsHide: true,
      });
    } finally {
      closeSync(log);
    }
    const h: NodeHandle = {
      name,
      child,
      logPath,
      ready: false,
      exited: false,
      expectedExit: false,
      exit: Promise.resolve(),
    };
    h.exit = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        h.exited = true;
        resolve();
        if (h.expectedExit) return;
        view.event(
          style.red(`✗ ${name} exited unexpectedly (${signal ?? `exit code ${code}`}); the end of its log:`),
        );
        for (const line of tail(logPath, 15)) view.plain(style.dim(`    ${line}`));
      });
      child.once('error', (err) => {
        if (h.exited) return;
        h.exited = true;
        resolve();
        view.event(style.red(`✗ ${name} could not be started: ${err.message}`));
      });
    });
    child.on('message', (m: NodeMessage) => onMessage(h, m));
    all.push(h);
    current.set(name, h);
    return h;
  };

  const readLedger = (reader: LedgerReader) => {
    for (const e of reader.readNew()) {
      ledgerEntries.push(e);
      active.delete(runKey(e.job, e.fireTime, e.shard, e.token));
      completed.add(occurrenceKey(e.job, e.fireTime, e.shard));
      let note: string | undefined;
      if (e.source === 'recover') {
        const dead = kill?.runs.find(
          (r) => r.job === e.job && r.fireTime === e.fireTime && r.shard === e.shard,
        );
        note = `recovered: attempt ${e.attempt}, token ${e.token}${dead ? ` > ${dead.token}` : ''}; ran once in all`;
      }
      view.run(e, note);
    }
  };
  const alive = () => [...current.values()].filter((h) => h.ready && !h.exited).length;

  const reader = new LedgerReader(ledgerPath);
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
      `${style.dim('  plan  ')} ${durationMs / 1000}s; halfway, SIGKILL the node running ${KILL_TARGET_JOB} and restart it ${RESTART_AFTER_MS / 1000}s later`,
    );
    view.plain();

    // ── start ──────────────────────────────────────────────────────────────────────────────
    for (const name of names) startNode(name);
    const startupDeadline = performance.now() + STARTUP_TIMEOUT_MS;
    while (![...current.values()].every((h) => h.ready)) {
      const dead = [...current.values()].find((h) => h.exited);
      if (dead || interrupted.signal.aborted || performance.now() > startupDeadline) {
        const why = dead
          ? `${dead.name} exited during startup`
          : interrupted.signal.aborted
            ? 'interrupted during startup'
            : `the nodes did not start within ${STARTUP_TIMEOUT_MS / 1000}s`;
        const log = dead ? tail(dead.logPath, 15).join('\n') : '';
        throw new OncelyError('INTERNAL', `oncely demo: ${why}${log ? `:\n${log}` : ''}`);
      }
      await wait(25);
    }
    const readyAt = Date.now();
    const readyPerf = performance.now();
    view.event(
      `${names.map((n) => style.node(n)).join(', ')} are up (pids ${[...current.values()].map((h) => h.child.pid).join(', ')})`,
    );
    view.columns();
    ticker = setInterval(() => {
      readLedger(reader);
      view.progress({ elapsedMs: performance.now() - t0, runs: ledgerEntries.length, alive: alive() });
    }, VIEW_REFRESH_MS);

    // ── kill one node halfway, restart it ─────────────────────────────────────────────────
    const endAt = t0 + durationMs;
    // A run of the kill target is mid-way (200 ms to 3 s old, with over a second to go) for 2.8 s of
    // every 6 s (it runs 4.5 s, the next fire time is skipped, the one after runs): a search of
    // at least 3.5 s always finds one. Killed by `latestKill`, its recovery starts within about
    // lockAtMostFor + one poll, before the end (and the end waits for it otherwise).
    const latestKill = endAt - 3_500;
    const killAt = Math.max(readyPerf + 1_500, Math.min(t0 + durationMs / 2, latestKill - 3_500));
    let restart: Promise<void> = Promise.resolve();
    const killTask = (async () => {
      await wait(killAt - performance.now(), interrupted.signal);
      while (!kill && !interrupted.signal.aborted && performance.now() <= latestKill) {
        const now = performance.now();
        const target = [...active.values()].find((a) => {
          const h = current.get(a.node);
          const age = now - a.heardAt;
          return a.run.job === KILL_TARGET_JOB && h?.ready && !h.exited && age >= 200 && age <= 3_000;
        });
        if (!target) {
          await wait(50, interrupted.signal);
          continue;
        }
        const h = current.get(target.node)!;
        // The node picks the instant itself (see crashWhenSafe in node-process.ts) and dies by SIGKILL.
        h.expectedExit = true;
        const answer = await new Promise<'killed' | 'declined' | 'timeout'>((resolve) => {
          const timer = setTimeout(() => resolve('timeout'), 3_000);
          crashAnswers.set(h.name, () => {
            clearTimeout(timer);
            resolve('declined');
          });
          void h.exit.then(() => {
            clearTimeout(timer);
            resolve('killed');
          });
          h.child.send({ type: 'crash', job: KILL_TARGET_JOB } satisfies ParentMessage);
        });
        crashAnswers.delete(h.name);
        if (answer === 'declined') {
          h.expectedExit = false;
          continue;
        }
        if (answer === 'timeout') {
          h.child.kill('SIGKILL');
          await h.exit;
        }
        const runs = [...active.values()].filter((a) => a.node === h.name);
        for (const a of runs) active.delete(runKey(a.run.job, a.run.fireTime, a.run.shard, a.run.token));
        kill = { node: h.name, runs: runs.map((a) => ({ ...a.run, node: h.name })) };
        readLedger(reader); // what completed before the kill is shown before it
        view.event(
          style.red(
            `✗ SIGKILL ${h.name}${runs.length > 0 ? ` in the middle of ${runs.length === 1 ? 'a run' : `${runs.length} runs`}:` : ''}`,
          ),
        );
        for (const a of runs) view.detail(a.run, `attempt ${a.run.attempt}, token ${a.run.token}`);
        view.event(
          style.dim(
            `  its claims lapse within lockAtMostFor (${LOCK_AT_MOST_FOR_MS / 1000}s); then a live node (maybe the restarted one) re-runs them with a higher token`,
          ),
        );
        restart = (async () => {
          await wait(RESTART_AFTER_MS, shuttingDown.signal);
          if (shuttingDown.signal.aborted) return;
          const again = startNode(h.name);
          while (!again.ready && !again.exited && !shuttingDown.signal.aborted) await wait(25);
          if (again.ready)
            view.event(
              `${style.green('↻')} ${style.node(h.name)} ${style.green(`restarted (pid ${again.child.pid})`)}`,
            );
        })();
      }
      if (!kill && !interrupted.signal.aborted)
        view.event(style.yellow(`no node was running ${KILL_TARGET_JOB} in time: nothing was killed`));
    })();

    await wait(endAt - performance.now(), interrupted.signal);
    await killTask;
    // The killed node's runs must be recovered before the end, or the demo would not show it.
    const pending = () =>
      (kill?.runs ?? []).filter((r) => {
        const key = occurrenceKey(r.job, r.fireTime, r.shard);
        return !recoveriesStarted.has(key) && !completed.has(key);
      });
    if (pending().length > 0 && !interrupted.signal.aborted) {
      view.event(style.dim(`waiting for the recovery of ${pending().map(describeRun).join(', ')}…`));
      const deadline = performance.now() + LOCK_AT_MOST_FOR_MS + 10 * POLL_INTERVAL_MS + 3_000;
      while (pending().length > 0 && !interrupted.signal.aborted && performance.now() < deadline)
        await wait(50, interrupted.signal);
    }

    // ── stop ─────────────────────────────────────────────────────────────────────────────
    shuttingDown.abort();
    await restart;
    const shutdownAt = Date.now();
    view.event('stopping the nodes (SIGTERM): each lets its running jobs finish, then exits');
    const running = [...current.values()].filter((h) => !h.exited);
    for (const h of running) {
      h.expectedExit = true;
      h.child.kill('SIGTERM');
    }
    const exited = Promise.all(running.map((h) => h.exit));
    const timedOut = await Promise.race([
      exited.then(() => false),
      wait(STOP_TIMEOUT_MS + 5_000).then(() => true),
    ]);
    if (timedOut) {
      const stuck = running.filter((h) => !h.exited);
      view.event(style.red(`${stuck.map((h) => h.name).join(', ')} did not stop in time: SIGKILL`));
      for (const h of stuck) h.child.kill('SIGKILL');
      await exited;
    }
    clearInterval(ticker);
    ticker = undefined;
    readLedger(reader);
    view.finish();

    // ── verdict ──────────────────────────────────────────────────────────────────────────
    const viewer = createScheduler({ store, node: 'oncely-demo' });
    const history = await Promise.all(DEMO_JOBS.map((j) => viewer.history({ job: j.name, limit: 10_000 })));
    const skipped: Occurrence[] = history
      .flat()
      .filter((h) => h.status === 'skipped')
      .map((h) => ({ job: h.job, fireTime: h.fireTime.getTime(), shard: h.shard ?? null }));
    const details = summarize({
      ledger: ledgerEntries,
      skipped,
      misfireSkipped,
      nodes: names,
      window: { from: readyAt, to: shutdownAt - END_ALLOWANCE_MS },
    });
    for (const line of formatSummary(details, style, kill)) view.plain(line);
    if (!ownDir) view.plain(style.dim(`files kept in ${dir}`));
    return details.summary;
  } finally {
    if (ticker) clearInterval(ticker);
    view.finish();
    shuttingDown.abort();
    killAll();
    await Promise.all(all.map((h) => h.exit));
    await store?.close().catch(() => {});
    process.off('SIGINT', onSigint);
    process.off('exit', killAll);
    if (ownDir) rmSync(dir, { recursive: true, force: true });
  }
}
