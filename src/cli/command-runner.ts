/**
 * Runs a jobs-file `command` for one occurrence: the scheduler handler of `oncely run`.
 *
 * - `/bin/sh -c command`, in the job's `cwd`, with the environment of job-env.ts (oncely's own
 *   `ONCELY_*` settings, and so its secrets, are not passed on).
 * - stdout and stderr are redacted as they arrive (each through a stream of `deps.redactor`, so a
 *   secret split across chunks is caught), then logged line by line (`out …` / `err …` lines of
 *   the oncely log), and the last 4,000 characters of both, interleaved as they arrived, are kept:
 *   exit 0 returns them (the scheduler stores a string result as the history entry's `output`);
 *   any other exit rejects with the exit code and that tail (the history entry's `error`).
 *   Invariant: no text of the command reaches the log or history unredacted; the tail is cut from
 *   redacted text, so cutting it cannot expose part of a secret.
 * - The command runs in its own process group (detached). When the run's signal aborts (timeout,
 *   stop after the grace period, lease lost) the whole group gets SIGTERM, so `sh -c 'sleep 100'`
 *   and its children stop too, then SIGKILL if anything in the group is still alive after
 *   `killAfterMs`; the handler then rejects with the signal's reason (so the scheduler records
 *   `timed-out` for a timeout).
 *
 * - A retry of an occurrence whose previous attempt's command is still dying (it ignored SIGTERM)
 *   waits for it: the scheduler starts retries without waiting for an aborted handler to settle,
 *   and two attempts of one occurrence must not run side by side.
 *
 * Invariant: the handler settles only once the shell has exited, and the returned promise of
 * `RunningCommands.idle()` only once every group it signalled is gone or SIGKILLed, so `oncely run`
 * never exits leaving a command it gave up on still running.
 */
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { JobContext, JobHandler } from '../scheduler/types.js';
import { commandEnv } from './job-env.js';
import type { CliJob } from './jobs-file.js';
import type { CliLog } from './log.js';
import type { Redactor } from './redact.js';

/** Characters of combined output kept for history. */
export const OUTPUT_TAIL = 4000;
/** A line longer than this is logged in pieces. */
const MAX_LINE = 16_384;
/** After the shell exits, how long its pipes may stay open (a background child holding them) before we stop reading. */
const PIPE_GRACE_MS = 1000;

/** The commands of this process that have not finished yet. */
export class RunningCommands {
  private readonly groups = new Map<number, Promise<void>>();
  private readonly byOccurrence = new Map<string, Promise<void>>();

  track(pid: number, occurrence: string, done: Promise<void>): void {
    this.groups.set(pid, done);
    this.byOccurrence.set(occurrence, done);
    void done.finally(() => {
      this.groups.delete(pid);
      if (this.byOccurrence.get(occurrence) === done) this.byOccurrence.delete(occurrence);
    });
  }

  /**
   * Resolves once the previous command of this occurrence on this node (if any) has ended. The
   * scheduler does not wait for an aborted handler: after a timeout it may start the retry while
   * the timed-out command is still dying (SIGTERM → SIGKILL); the retry waits for it here.
   */
  has(occurrence: string): boolean {
    return this.byOccurrence.has(occurrence);
  }

  async previousEnded(occurrence: string): Promise<void> {
    await this.byOccurrence.get(occurrence);
  }

  get size(): number {
    return this.groups.size;
  }

  /** Resolves once every tracked command has ended (each ends within its kill timeout once signalled). */
  async idle(): Promise<void> {
    while (this.groups.size > 0) await Promise.all([...this.groups.values()]);
  }

  /** Sends `signal` to every running command's process group at once (a second Ctrl-C). */
  killAll(signal: NodeJS.Signals): void {
    for (const pid of this.groups.keys()) killGroup(pid, signal);
  }
}

export interface RunnerDeps {
  /** ONCELY_NODE: the `--node` value (default: the scheduler's node id). */
  node: string;
  log: CliLog;
  running: RunningCommands;
  /** Hides oncely's secrets in the command's output (secrets.ts `secretsRedactor()`). */
  redactor: Redactor;
  /** SIGTERM → SIGKILL delay after an abort (default 5 s). */
  killAfterMs?: number;
}

function killGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is gone.
  }
}

function groupAlive(pid: number): boolean {
  return killGroup(pid, 0 as unknown as NodeJS.Signals);
}

/** `job=backup fire=2024-05-01T10:00:00.000Z shard=1`: how log lines name one run. */
export function runLabel(job: string, fireTime: Date, shard: number | undefined): string {
  return `job=${job} fire=${fireTime.toISOString()}${shard === undefined ? '' : ` shard=${shard}`}`;
}

/** The scheduler handler for `job`. */
export function commandHandler(job: CliJob, deps: RunnerDeps): JobHandler {
  return (ctx) => runCommand(job, ctx, deps);
}

/** Identifies an occurrence (not an attempt) among this node's commands. */
function occurrenceKey(ctx: JobContext): string {
  return JSON.stringify([ctx.job, ctx.scheduleId ?? null, ctx.fireTime.getTime(), ctx.shard?.index ?? null]);
}

export async function runCommand(job: CliJob, ctx: JobContext, deps: RunnerDeps): Promise<string> {
  const { signal } = ctx;
  const occurrence = occurrenceKey(ctx);
  const label = runLabel(ctx.job, ctx.fireTime, ctx.shard?.index);
  if (deps.running.has(occurrence)) {
    deps.log.line(
      `waiting  ${label}: attempt ${ctx.attempt} starts once the previous attempt's command has exited`,
    );
    await deps.running.previousEnded(occurrence);
    if (signal.aborted) {
      deps.log.line(`${label}: attempt ${ctx.attempt} not started: ${reasonText(signal.reason)}`);
      throw signal.reason;
    }
  }
  if (signal.aborted) throw signal.reason;
  const killAfterMs = deps.killAfterMs ?? 5000;
  let tail = '';
  const keep = (chunk: string) => {
    tail = (tail + chunk).slice(-OUTPUT_TAIL);
  };

  const child = spawn('/bin/sh', ['-c', job.command], {
    cwd: job.cwd ?? process.cwd(),
    env: commandEnv(job, ctx, deps.node),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid;

  const pumps = [pump(child.stdout, 'out', label, deps, keep), pump(child.stderr, 'err', label, deps, keep)];

  let killTimer: NodeJS.Timeout | undefined;
  const onAbort = () => {
    if (pid === undefined) return;
    deps.log.line(`killing  ${label}: ${reasonText(signal.reason)} (SIGTERM to its process group)`);
    killGroup(pid, 'SIGTERM');
    killTimer = setTimeout(() => {
      if (killGroup(pid, 'SIGKILL'))
        deps.log.line(`${label}: still running ${killAfterMs} ms after SIGTERM; sent SIGKILL`);
    }, killAfterMs);
  };
  signal.addEventListener('abort', onAbort, { once: true });

  const result = new Promise<string>((resolve, reject) => {
    child.once('error', (err) => {
      // Spawn failed (e.g. the cwd vanished): there is no process to wait for.
      signal.removeEventListener('abort', onAbort);
      reject(new Error(deps.redactor.redact(`could not start the command: ${err.message}`)));
    });
    child.once('exit', (code, sig) => {
      signal.removeEventListener('abort', onAbort);
      let pipeTimer: NodeJS.Timeout | undefined;
      const pipesGrace = new Promise<void>((r) => {
        pipeTimer = setTimeout(r, PIPE_GRACE_MS);
      });
      void Promise.race([Promise.all(pumps.map((p) => p.ended)), pipesGrace]).then(() => {
        clearTimeout(pipeTimer);
        // A background child may hold the pipes open: stop reading, do not wait for it, but take
        // what each pump still holds back (a partial line, the end of a possible secret).
        child.stdout.destroy();
        child.stderr.destroy();
        for (const p of pumps) p.finish();
        if (signal.aborted) {
          reject(signal.reason);
          return;
        }
        if (code === 0) {
          resolve(tail);
          return;
        }
        const head = code !== null ? `command exited with code ${code}` : `command was killed by ${sig}`;
        // The scheduler keeps the first 4,000 characters of an error: leave room for the head.
        const shown = tail.slice(-(OUTPUT_TAIL - head.length - 40));
        reject(new Error(shown === '' ? `${head} (no output)` : `${head}; last output below\n${shown}`));
      });
    });
  });

  if (pid !== undefined) {
    // Done for shutdown purposes once the shell is gone and, if we signalled the group, the group too.
    const done = result
      .catch(() => {})
      .then(async () => {
        if (killTimer === undefined) return;
        // Bounded: an orphan nobody reaps (no init in a container) stays a zombie in the group.
        const deadline = Date.now() + killAfterMs + 2000;
        while (groupAlive(pid) && Date.now() < deadline) await delay(100);
        clearTimeout(killTimer);
      });
    deps.running.track(pid, occurrence, done);
  }
  return await result;
}

interface Pump {
  /** Resolves when the stream has ended (and its text is all logged and kept). */
  ended: Promise<void>;
  /** Ends it now, keeping and logging what was held back (idempotent). */
  finish(): void;
}

/**
 * Redacts `stream`, passes the redacted text to `keep` and logs each line as
 * `<prefix> <label> | line`.
 */
function pump(
  stream: Readable,
  prefix: string,
  label: string,
  deps: Pick<RunnerDeps, 'log' | 'redactor'>,
  keep: (chunk: string) => void,
): Pump {
  const redacting = deps.redactor.stream();
  let partial = '';
  let finished = false;
  const take = (text: string) => {
    if (text === '') return;
    keep(text);
    partial += text;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    while (partial.length > MAX_LINE) {
      lines.push(partial.slice(0, MAX_LINE));
      partial = partial.slice(MAX_LINE);
    }
    for (const line of lines) deps.log.line(`${prefix} ${label} | ${line.replace(/\r$/, '')}`);
  };
  let resolveEnded = () => {};
  const ended = new Promise<void>((resolve) => {
    resolveEnded = resolve;
  });
  const finish = () => {
    if (finished) return;
    finished = true;
    take(redacting.end());
    if (partial !== '') deps.log.line(`${prefix} ${label} | ${partial}`);
    partial = '';
    resolveEnded();
  };
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    if (!finished) take(redacting.push(chunk));
  });
  stream.once('end', finish);
  stream.once('close', finish);
  stream.once('error', finish);
  return { ended, finish };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function reasonText(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason);
}
