/**
 * The demo's node processes: each a separate Node.js process with its stdout and stderr in
 * `<dir>/<name>.log` and messages over IPC. Invariant: a node whose exit the demo did not cause
 * (`expectedExit` still false) is reported with the end of its log; one the demo stopped or
 * killed exits silently.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from '../../core/clock.js';
import { OncelyError } from '../../core/errors.js';
import type { LiveView } from './live-view.js';
import type { NodeMessage } from './protocol.js';
import { STOP_TIMEOUT_MS } from './sample-jobs.js';

const STARTUP_TIMEOUT_MS = 30_000;

export interface NodeHandle {
  name: string;
  child: ChildProcess;
  logPath: string;
  ready: boolean;
  exited: boolean;
  /** Stopped or killed by the demo: its exit is no surprise. */
  expectedExit: boolean;
  exit: Promise<void>;
}

export interface FleetOptions {
  /** The compiled node entry (see node-entry.ts). */
  entry: string;
  dir: string;
  dbPath: string;
  ledgerPath: string;
  /** Every node's name, in order: a node's index in it is its `--index`. */
  names: readonly string[];
  view: LiveView;
  onMessage: (h: NodeHandle, m: NodeMessage) => void;
}

/** The last `lines` lines of a file; none if it cannot be read. */
export function tail(path: string, lines: number): string[] {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines);
  } catch {
    return [];
  }
}

/**
 * The node processes of one demo, restarts included.
 *
 * @example
 * const fleet = new NodeFleet({ entry, dir, dbPath, ledgerPath, names, view, onMessage });
 * await fleet.startAll(interrupted.signal);
 * await fleet.stop();
 */
export class NodeFleet {
  /** Every process started, a restarted node's old one too: all are awaited at the end. */
  readonly all: NodeHandle[] = [];
  /** The latest process of each node name. */
  readonly current = new Map<string, NodeHandle>();

  constructor(private readonly options: FleetOptions) {}

  /** SIGKILLs every node still running; also the process's 'exit' listener, so none outlives it. */
  readonly killAll = (): void => {
    for (const h of this.all) {
      if (h.exited) continue;
      h.expectedExit = true;
      try {
        h.child.kill('SIGKILL');
      } catch {}
    }
  };

  /** Spawns the node `name` (again, for a restart); it is ready once it says so. */
  start(name: string): NodeHandle {
    const { entry, dir, dbPath, ledgerPath, names, view } = this.options;
    const { style } = view;
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
    child.on('message', (m: NodeMessage) => this.options.onMessage(h, m));
    this.all.push(h);
    this.current.set(name, h);
    return h;
  }

  /** Nodes that are up: ready and not exited. */
  alive(): number {
    return [...this.current.values()].filter((h) => h.ready && !h.exited).length;
  }

  /**
   * Starts every node and waits until all are ready; throws INTERNAL (with the end of its log)
   * if one exits first, or when interrupted or out of time.
   */
  async startAll(interrupted: AbortSignal): Promise<void> {
    for (const name of this.options.names) this.start(name);
    const startupDeadline = performance.now() + STARTUP_TIMEOUT_MS;
    while (![...this.current.values()].every((h) => h.ready)) {
      const dead = [...this.current.values()].find((h) => h.exited);
      if (dead || interrupted.aborted || performance.now() > startupDeadline) {
        const why = dead
          ? `${dead.name} exited during startup`
          : interrupted.aborted
            ? 'interrupted during startup'
            : `the nodes did not start within ${STARTUP_TIMEOUT_MS / 1000}s`;
        const log = dead ? tail(dead.logPath, 15).join('\n') : '';
        throw new OncelyError('INTERNAL', `oncely demo: ${why}${log ? `:\n${log}` : ''}`);
      }
      await systemClock.sleep(25);
    }
  }

  /**
   * Stops the running nodes with SIGTERM (each lets its running jobs finish, then exits); those
   * not gone within STOP_TIMEOUT_MS + 5 s are SIGKILLed.
   */
  async stop(): Promise<void> {
    const { view } = this.options;
    const { style } = view;
    view.event('stopping the nodes (SIGTERM): each lets its running jobs finish, then exits');
    const running = [...this.current.values()].filter((h) => !h.exited);
    for (const h of running) {
      h.expectedExit = true;
      h.child.kill('SIGTERM');
    }
    const exited = Promise.all(running.map((h) => h.exit));
    const timedOut = await Promise.race([
      exited.then(() => false),
      systemClock.sleep(STOP_TIMEOUT_MS + 5_000).then(() => true),
    ]);
    if (timedOut) {
      const stuck = running.filter((h) => !h.exited);
      view.event(style.red(`${stuck.map((h) => h.name).join(', ')} did not stop in time: SIGKILL`));
      for (const h of stuck) h.child.kill('SIGKILL');
      await exited;
    }
  }
}
