/**
 * `npm run bench:scale` (issue 8): per-user stored schedules at scale, oncely and the tools a
 * user would pick instead, measured in one run.
 *
 * For each backend (PostgreSQL, Redis), node count (1, 2, 4 separate processes) and system
 * (oncely on both; BullMQ on Redis; pg-boss and graphile-worker on PostgreSQL), on a fresh
 * database (PostgreSQL) or key prefix (Redis) of one throwaway server:
 *
 * 1. seed: a seeder process writes `--other` schedules due at other minutes of the day, then
 *    `--due` schedules due at the fire instant T (per-user daily crons in five time zones, all
 *    mapping to T; workload.ts); T is the next minute boundary after the time the due ones and
 *    the node start-up should take (from the rate seen so far) plus `--lead` seconds.
 * 2. nodes: N node processes start and load; if that took past T − lead/2, the due schedules
 *    are rewritten for a later minute (at most twice). With `--warm N`, N more schedules are due
 *    together one minute before T: the processes run one fan-out before the measured one (its
 *    code compiled by V8, as in a service that has been up a while; see BENCHMARKS.md).
 * 3. fan-out: from T until every due schedule has started once, or T + `--fire-timeout`:
 *    lateness of each first start (host time at handler start − T; one host, one clock),
 *    duplicates, and per node CPU, peak RSS, driver round trips; rows written on the server.
 * 4. idle: after the fan-out and a settling pause, `--idle` seconds with everything stored and
 *    nothing due: round trips/s, rows read/s, CPU.
 *
 * Every phase has a deadline; what did not finish is reported as "N of M by T s", not hidden.
 *
 * A peer whose installed package declares a newer Node.js than the bench runs on (pg-boss 12:
 * >= 22.12) has its processes forked with a Node.js that does, fetched once from the npm registry
 * into .cache/ (node-runtime.ts); the report says which and why. If that fails, only that peer's
 * rows say so.
 */
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { dropPrefixed } from '../cleanup.js';
import { machineLine, publish, runMain } from '../report.js';
import { ROOT } from '../run-backend.js';
import { type BenchServer, provision, reason } from '../servers.js';
import { Ledger, type LedgerSummary } from './ledger.js';
import { enginesNode, type Runtime, runtimeFor } from './node-runtime.js';
import { type ProcUsage, procUsage, ServerCpu } from './proc.js';
import type { ChildConfig, ChildSample, FromChild, Role, ToChild } from './protocol.js';
import { postgresStats, redisStats, type ServerCounts, type ServerStats } from './server-stats.js';
import { ceilMinute } from './workload.js';

const HEADING = '## Scale (`npm run bench:scale`)';
/** The quick profile's own section (issue 30: every claim-path change is checked with it). */
const QUICK_HEADING = '## Scale, quick profile (`npm run bench:scale -- --quick`)';
const HERE = dirname(fileURLToPath(import.meta.url));

type Backend = 'postgres' | 'redis';
type SystemName = 'oncely' | 'bullmq' | 'pgboss' | 'graphile';
type PeerName = Exclude<SystemName, 'oncely'>;

interface SystemSpec {
  label: string;
  file: string;
  backends: readonly Backend[];
  /** npm package whose version is reported. */
  pkg?: string;
}

const SYSTEMS: Record<SystemName, SystemSpec> = {
  oncely: { label: 'oncely', file: 'oncely-node.ts', backends: ['postgres', 'redis'] },
  bullmq: { label: 'BullMQ', file: 'peers/bullmq.ts', backends: ['redis'], pkg: 'bullmq' },
  pgboss: { label: 'pg-boss', file: 'peers/pgboss.ts', backends: ['postgres'], pkg: 'pg-boss' },
  graphile: {
    label: 'graphile-worker',
    file: 'peers/graphile.ts',
    backends: ['postgres'],
    pkg: 'graphile-worker',
  },
};
const PEERS: readonly PeerName[] = ['bullmq', 'pgboss', 'graphile'];

interface Options {
  due: number;
  other: number;
  nodes: number[];
  backends: Backend[];
  peers: PeerName[];
  concurrency: number;
  leadS: number;
  fireTimeoutS: number;
  seedTimeoutS: number;
  idleS: number;
  quick: boolean;
  /**
   * --warm N: N more schedules due together one minute before T (`WARM_AHEAD_MS`), for every
   * system alike, so that T's fan-out runs in processes that have run one already (code compiled
   * by V8, pools and caches filled), as in a service that has been up for a while.
   */
  warm: number;
  /** oncely's schedules or job changed for issue 32's checks (ChildConfig.variant). */
  variant?: 'jitter' | 'rate' | 'queue';
  /** --due, --other or --nodes was given (a quick run so changed is not the quick profile). */
  resized: boolean;
  verbose: boolean;
}

/** How long before the fire instant T the warm-up's schedules fall due (`--warm`). */
const WARM_AHEAD_MS = 60_000;
/** Seeding rate assumed for planning before any was seen. */
const DEFAULT_RATE = 200;
/** How far ahead `--other 0` writes the due schedules once to measure the seeding rate. */
const PROBE_AHEAD_MS = 6 * 3_600_000;
/** After the fan-out, before the idle window: PostgreSQL publishes idle backends' counts within ~10 s. */
const SETTLE_MS: Record<Backend, number> = { postgres: 11_000, redis: 3_000 };
const MAX_REPLANS = 2;

// ---------------------------------------------------------------------------------------------
// Child processes

/**
 * One node at one moment: its own counters, or none when it did not answer in time (a busy event
 * loop: pg-boss's cron pass over 1,000,000 schedules holds it for longer than the sample timeout);
 * /proc still tells its CPU and RSS then.
 */
interface NodeSample {
  sample: ChildSample | undefined;
  proc: ProcUsage | undefined;
}

/** How long a node gets to answer a sample before it counts as busy (NodeSample). */
const SAMPLE_TIMEOUT_MS = 30_000;

interface Snapshot {
  at: number;
  nodes: NodeSample[];
  server: ServerCounts;
  serverCpuUs: number;
}

/** One forked system process: IPC, its stderr tail, and a clean or forced stop. */
class Child {
  readonly proc: ChildProcess;
  private readonly tail: string[] = [];
  private readonly listeners = new Set<(m: FromChild) => void>();
  private seq = 0;
  exited: string | undefined;
  error: string | undefined;

  constructor(
    readonly label: string,
    file: string,
    readonly config: ChildConfig,
    env: NodeJS.ProcessEnv,
    verbose: boolean,
    execPath: string,
  ) {
    this.proc = fork(join(HERE, file), [], {
      execPath,
      // SCALE_CPU_PROF=<dir>: each node process writes a V8 CPU profile there (where the time goes).
      execArgv: [
        '--import',
        'tsx',
        ...(process.env['SCALE_CPU_PROF']
          ? ['--cpu-prof', `--cpu-prof-dir=${process.env['SCALE_CPU_PROF']}`]
          : []),
        // SCALE_NODE_ARGS='--trace-gc …': more Node.js flags for every child (shown with --verbose).
        ...(process.env['SCALE_NODE_ARGS']?.split(' ').filter((a) => a !== '') ?? []),
      ],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env,
    });
    const keep = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        if (line === '') continue;
        this.tail.push(line);
        if (this.tail.length > 20) this.tail.shift();
        if (verbose) process.stderr.write(`  [${label}] ${line}\n`);
      }
    };
    this.proc.stdout?.on('data', keep);
    this.proc.stderr?.on('data', keep);
    this.proc.on('message', (m: FromChild) => {
      if (m.t === 'error') this.error = m.message.split('\n')[0];
      for (const l of this.listeners) l(m);
    });
    this.proc.on('exit', (code, signal) => {
      this.exited = `exited (${signal ?? code})`;
      for (const l of this.listeners) l({ t: 'error', message: this.exited });
    });
    this.send({ t: 'init', config });
  }

  get pid(): number {
    return this.proc.pid ?? -1;
  }

  /** Why it failed, with the last lines it printed. */
  why(): string {
    if (this.error !== undefined) return `${this.label}: ${this.error}`;
    const last = this.tail.slice(-3).join(' / ');
    return `${this.label}: ${this.exited ?? 'no answer'}${last ? ` (${last})` : ''}`;
  }

  send(m: ToChild): void {
    if (this.proc.connected) this.proc.send(m);
  }

  on(listener: (m: FromChild) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The first message `pick` accepts; rejects when the child fails, exits or takes longer than `timeoutMs`. */
  waitFor<T>(pick: (m: FromChild) => T | undefined, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const done = (fn: () => void) => {
        clearTimeout(timer);
        off();
        fn();
      };
      const timer = setTimeout(
        () =>
          done(() => reject(new Error(`${this.label}: no answer within ${Math.round(timeoutMs / 1000)} s`))),
        timeoutMs,
      );
      const off = this.on((m) => {
        if (m.t === 'error') return done(() => reject(new Error(this.why())));
        const value = pick(m);
        if (value !== undefined) done(() => resolve(value));
      });
      if (this.exited) done(() => reject(new Error(this.why())));
    });
  }

  /**
   * Its counters; without them (only /proc's) when it is alive but does not answer within
   * SAMPLE_TIMEOUT_MS, so that a busy node ends no run: its starts still count when they arrive
   * (each carries its own start time). Throws when it failed or exited.
   */
  async sample(): Promise<NodeSample> {
    const seq = ++this.seq;
    this.send({ t: 'sample', seq });
    try {
      const sample = await this.waitFor(
        (m) => (m.t === 'sample' && m.seq === seq ? m : undefined),
        SAMPLE_TIMEOUT_MS,
      );
      return { sample, proc: procUsage(this.pid) };
    } catch (err) {
      if (this.exited !== undefined || this.error !== undefined) throw err;
      return { sample: undefined, proc: procUsage(this.pid) };
    }
  }

  /** Asks it to stop (nodes drain, seeders close); SIGKILL after `graceMs`. */
  async stop(graceMs = 30_000): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    this.send({ t: 'stop' });
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// One run: one system, one backend, one node count

interface RunResult {
  backend: Backend;
  system: SystemName;
  nodes: number;
  seedMode: string;
  nodeInfo: string;
  seeded: number;
  seedTotal: number;
  seedMs: number;
  /** Set when the run stopped early (seeding past its deadline, a process failing). */
  failure?: string;
  /** Moments when a node did not answer a sample (its counters are missing from those figures). */
  busy: string[];
  replans: number;
  fireAt?: number;
  fire?: LedgerSummary;
  /** (--warm) Warm-up occurrences started by T − 2 s, when the fan-out window opens. */
  warmStarted?: number;
  /** ms from T until every due schedule had started, when they all did. */
  allStartedMs?: number;
  /** Per occurrence started, over the fan-out window (polling during it included). */
  roundTripsPerOcc?: number;
  storeCallsPerOcc?: number;
  writesPerOcc?: number;
  /** Per node: CPU seconds in the fan-out window; RSS (MiB) at its end, and the peak so far. */
  nodeCpuS?: number[];
  /** Of nodeCpuS, each node process's main thread (proc.ts `mainCpuUs`; NaN without /proc). */
  nodeMainCpuS?: number[];
  nodeRssMiB?: number[];
  nodePeakRssMiB?: number[];
  serverCpuS?: number;
  /** The fan-out window's length (T − 2 s to the end of the settling pause), s. */
  windowS?: number;
  idle?: {
    roundTripsPerS: number;
    storeCallsPerS?: number;
    rowsReadPerS: number;
    nodeCpuMsPerS: number;
    serverCpuMsPerS: number;
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

function clock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 19);
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** NaN when neither /proc nor the node told it: the figures built from it show as '—'. */
function cpuUs(n: NodeSample): number {
  return n.proc?.cpuUs ?? n.sample?.cpuUs ?? Number.NaN;
}

async function runOne(
  server: BenchServer,
  backend: Backend,
  system: SystemName,
  nodes: number,
  o: Options,
  execPath: string,
): Promise<RunResult> {
  const spec = SYSTEMS[system];
  const tag = randomBytes(4).toString('hex');
  const prefix = `bench_${tag}_`;
  const result = emptyResult(backend, system, nodes, o);
  const say = (text: string) => process.stderr.write(text);
  say(`${backend} ${spec.label} ×${nodes}:`);
  const cleanups: (() => Promise<unknown>)[] = [];
  const children: Child[] = [];
  let url = server.url;
  const config = (role: Role, node: number): ChildConfig => ({
    role,
    backend,
    url,
    prefix,
    node,
    concurrency: o.concurrency,
    seedDeadline: Date.now() + o.seedTimeoutS * 1000,
    ...(o.variant !== undefined && { variant: o.variant }),
  });
  const env = { ...process.env };
  try {
    let stats: ServerStats;
    if (backend === 'postgres') {
      const database = `scale_${tag}`;
      const admin = new pg.Client({ connectionString: server.url });
      admin.on('error', () => {}); // a server stopping under it; queries still reject
      await admin.connect();
      cleanups.push(() => admin.end());
      await admin.query(`CREATE DATABASE ${database}`);
      cleanups.push(() => admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
      url = withDatabase(server.url, database);
      stats = await postgresStats(server.url, database);
    } else {
      cleanups.push(() => dropPrefixed('redis', server.url, prefix));
      stats = await redisStats(server.url);
    }
    cleanups.push(() => stats.close());
    const tracker = ServerCpu.start(server.url);
    if (tracker) cleanups.push(async () => tracker.stop());
    const serverCpu = () => tracker?.totalUs() ?? Number.NaN;

    // 1. Seed: the others, then the due ones for an instant planned from the rate so far.
    const seeder = new Child(`${spec.label} seeder`, spec.file, config('seed', 0), env, o.verbose, execPath);
    children.push(seeder);
    await seeder.waitFor((m) => (m.t === 'ready' ? m : undefined), 60_000);
    const seedHard = o.seedTimeoutS * 1000 + 120_000;
    const seed = async (kind: 'due' | 'other', from: number, count: number, at: number) => {
      const t0 = performance.now();
      let done = 0;
      const off = seeder.on((m) => {
        if (m.t === 'progress') done = m.done;
      });
      seeder.send({ t: 'seed', kind, from, count, at });
      try {
        return await seeder.waitFor((m) => (m.t === 'seeded' ? m : undefined), seedHard);
      } catch {
        // A call that never returned: what it had reported counts, and the run stops here.
        return { done, ms: performance.now() - t0, mode: `${spec.label} seeder stopped answering` };
      } finally {
        off();
      }
    };
    say(' seeding…');
    const other = await seed('other', o.due, o.other, Date.now());
    result.seeded += other.done;
    result.seedMs += other.ms;
    // With `--other 0` nothing was seeded to plan the fire instant from, and the default rate is a
    // slow system's (1,000,000 due were planned two hours ahead): the due schedules are written
    // once for an instant hours away, which measures this system's rate, and again (by id, as a
    // late plan rewrites them) for the fire instant.
    let probe: { done: number; ms: number } | undefined;
    if (o.other === 0 && o.due > 0) {
      say(' measuring the seeding rate…');
      probe = await seed('due', 0, o.due, ceilMinute(Date.now() + PROBE_AHEAD_MS));
    }
    const rate = () => {
      const [n, ms] = result.seeded > 0 ? [result.seeded, result.seedMs] : [probe?.done ?? 0, probe?.ms ?? 0];
      return n > 0 && ms > 0 ? n / (ms / 1000) : DEFAULT_RATE;
    };
    const dueSeconds = () => ((o.due + o.warm) / rate()) * 1.5;
    const startSeconds = 10 + (o.due + o.other + o.warm) / 20_000;
    // With a warm-up, the first instant (the one the nodes must be up for) is a minute before T.
    const warmAhead = o.warm > 0 ? WARM_AHEAD_MS : 0;
    let fireAt = ceilMinute(Date.now() + (dueSeconds() + startSeconds + o.leadS) * 1000 + warmAhead);
    const warm = () => ({ from: o.due + o.other, count: o.warm, at: fireAt - WARM_AHEAD_MS });
    // The warm-up's schedules, then T's: both written for their instants (again when replanned).
    const seedDue = async () => {
      const w = o.warm > 0 ? await seed('due', warm().from, o.warm, warm().at) : undefined;
      const due = await seed('due', 0, o.due, fireAt);
      return w ? { done: due.done + w.done, ms: due.ms + w.ms, mode: due.mode } : due;
    };
    if (other.done === o.other) {
      const due = await seedDue();
      result.seeded += due.done;
      result.seedMs += due.ms;
      result.seedMode = due.mode;
    } else {
      result.seedMode = other.mode;
    }
    say(` ${result.seeded.toLocaleString('en-US')} in ${(result.seedMs / 1000).toFixed(1)} s;`);
    if (result.seeded < result.seedTotal) {
      result.failure = `seeded ${result.seeded.toLocaleString('en-US')} of ${result.seedTotal.toLocaleString('en-US')} by ${o.seedTimeoutS} s`;
      say(` ${result.failure}\n`);
      return result;
    }

    // 2. Nodes.
    say(' nodes…');
    const ledgerRef: { current: Ledger | undefined } = { current: undefined };
    const early: [number, string, number | null, number][] = [];
    for (let n = 1; n <= nodes; n++) {
      const child = new Child(
        `${spec.label} node ${n}`,
        spec.file,
        config('node', n),
        env,
        o.verbose,
        execPath,
      );
      children.push(child);
      child.on((m) => {
        if (m.t !== 'starts') return;
        for (const [id, fire, at] of m.rows) {
          if (ledgerRef.current) ledgerRef.current.add(n, id, fire, at);
          else early.push([n, id, fire, at]);
        }
      });
    }
    const nodeChildren = children.slice(1);
    const readies = await Promise.all(
      nodeChildren.map((c) => c.waitFor((m) => (m.t === 'ready' ? m : undefined), startSeconds * 4_000)),
    );
    result.nodeInfo = readies[0]?.info ?? '';
    while (Date.now() > fireAt - warmAhead - (o.leadS * 1000) / 2) {
      if (result.replans >= MAX_REPLANS)
        throw new Error('could not plan the fire instant ahead of the nodes');
      result.replans++;
      fireAt = ceilMinute(Date.now() + (dueSeconds() + o.leadS) * 1000 + warmAhead);
      say(` late, rewriting the due schedules for ${clock(fireAt)}…`);
      const again = await seedDue();
      if (again.done < o.due + o.warm)
        throw new Error('seeding deadline passed while rewriting the due schedules');
    }
    await seeder.stop();
    result.fireAt = fireAt;
    const ledger = new Ledger(fireAt, o.due, o.warm > 0 ? warm() : undefined);
    ledgerRef.current = ledger;
    for (const [n, id, fire, at] of early) ledger.add(n, id, fire, at);

    const snapshot = async (when: string): Promise<Snapshot> => {
      const nodesNow = await Promise.all(nodeChildren.map((c) => c.sample()));
      nodesNow.forEach((n, i) => {
        if (!n.sample)
          result.busy.push(
            `node ${i + 1} did not answer within ${SAMPLE_TIMEOUT_MS / 1000} s at ${when} (its round trips are not counted)`,
          );
      });
      return { at: Date.now(), nodes: nodesNow, server: await stats.read(), serverCpuUs: serverCpu() };
    };
    const failed = () => nodeChildren.find((c) => c.exited !== undefined || c.error !== undefined);

    // 3. Fan-out.
    if (o.warm > 0) {
      say(` warm-up at ${clock(warm().at)}…`);
      await sleep(fireAt - 2_000 - Date.now());
      result.warmStarted = ledger.warmStarted;
      say(` ${int(ledger.warmStarted)} of ${int(o.warm)} started by T − 2 s;`);
    }
    say(` fire at ${clock(fireAt)}…`);
    await sleep(fireAt - 2_000 - Date.now());
    const a = await snapshot('T − 2 s');
    const deadline = fireAt + o.fireTimeoutS * 1000;
    while (!ledger.complete() && Date.now() < deadline && !failed()) await sleep(50);
    const broken = failed();
    if (broken) throw new Error(broken.why());
    const finished = ledger.complete();
    await sleep(SETTLE_MS[backend]);
    const b = await snapshot('the end of the fan-out window');
    // Read after the settling pause, so a duplicate reported late still counts; unfinished, the
    // starts a busy node reported only after the deadline count if they began before it.
    const fire = ledger.summary(finished ? undefined : deadline);
    const allStarted = fire.started >= o.due;
    result.fire = fire;
    if (allStarted) result.allStartedMs = fire.max;
    say(
      allStarted
        ? ` all ${o.due.toLocaleString('en-US')} started by ${(fire.max / 1000).toFixed(2)} s;`
        : ` ${fire.started.toLocaleString('en-US')} of ${o.due.toLocaleString('en-US')} by ${o.fireTimeoutS} s;`,
    );
    // Nothing started: no per-occurrence figure (a division by 1 printed a row's totals as one).
    const occ = fire.started > 0 ? fire.started : Number.NaN;
    // A node that did not answer makes a sum NaN, shown as '—' (see `busy`).
    const sum = (s: Snapshot, f: (n: NodeSample) => number) => s.nodes.reduce((acc, n) => acc + f(n), 0);
    const trips = (n: NodeSample) => n.sample?.roundTrips ?? Number.NaN;
    const calls = (n: NodeSample) => (n.sample ? (n.sample.storeCalls ?? 0) : Number.NaN);
    const hasStoreCalls = (s: Snapshot) => s.nodes.some((n) => n.sample?.storeCalls !== undefined);
    result.roundTripsPerOcc = (sum(b, trips) - sum(a, trips)) / occ;
    if (hasStoreCalls(b)) result.storeCallsPerOcc = (sum(b, calls) - sum(a, calls)) / occ;
    result.writesPerOcc = (b.server.written - a.server.written) / occ;
    result.nodeCpuS = b.nodes.map((n, i) => (cpuUs(n) - cpuUs(a.nodes[i]!)) / 1e6);
    result.nodeMainCpuS = b.nodes.map(
      (n, i) => ((n.proc?.mainCpuUs ?? Number.NaN) - (a.nodes[i]!.proc?.mainCpuUs ?? Number.NaN)) / 1e6,
    );
    result.nodeRssMiB = b.nodes.map((n) => (n.proc?.rssBytes ?? n.sample?.rssBytes ?? Number.NaN) / 2 ** 20);
    result.nodePeakRssMiB = b.nodes.map(
      (n) => (n.proc?.peakRssBytes ?? n.sample?.peakRssBytes ?? Number.NaN) / 2 ** 20,
    );
    result.serverCpuS = (b.serverCpuUs - a.serverCpuUs) / 1e6;
    result.windowS = (b.at - a.at) / 1000;

    // 4. Idle (only when the fan-out is over: otherwise it is not idle).
    if (allStarted) {
      say(' idle…');
      await sleep(o.idleS * 1000);
      const d = await snapshot('the end of the idle window');
      const seconds = (d.at - b.at) / 1000;
      result.idle = {
        roundTripsPerS: (sum(d, trips) - sum(b, trips)) / seconds,
        rowsReadPerS: (d.server.read - b.server.read) / seconds,
        nodeCpuMsPerS: (sum(d, cpuUs) - sum(b, cpuUs)) / 1000 / seconds,
        serverCpuMsPerS: (d.serverCpuUs - b.serverCpuUs) / 1000 / seconds,
        ...(hasStoreCalls(d) && { storeCallsPerS: (sum(d, calls) - sum(b, calls)) / seconds }),
      };
    }
    say(' done\n');
  } catch (err) {
    result.failure = reason(err);
    say(` failed: ${result.failure}\n`);
  } finally {
    await Promise.all(children.map((c) => c.stop().catch(() => {})));
    for (const clean of cleanups.reverse()) await clean().catch(() => {});
  }
  return result;
}

/** A result with nothing measured yet. */
function emptyResult(backend: Backend, system: SystemName, nodes: number, o: Options): RunResult {
  return {
    backend,
    system,
    nodes,
    seedMode: '',
    nodeInfo: '',
    seeded: 0,
    seedTotal: o.due + o.other + o.warm,
    seedMs: 0,
    replans: 0,
    busy: [],
  };
}

function notRun(backend: Backend, system: SystemName, nodes: number, o: Options, why: string): RunResult {
  return { ...emptyResult(backend, system, nodes, o), failure: why };
}

// ---------------------------------------------------------------------------------------------
// Report

function packageVersion(name: string): string {
  try {
    return String(JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version);
  } catch {
    return '?';
  }
}

/** Text for a table cell: no pipes, no line breaks. */
const cell = (text: string) => text.replace(/\|/g, '/').replace(/\s+/g, ' ');
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const seconds = (ms: number) => (Number.isFinite(ms) ? (ms / 1000).toFixed(ms < 10_000 ? 2 : 1) : '—');
const fixed = (n: number | undefined, digits: number) =>
  n !== undefined && Number.isFinite(n) ? n.toFixed(digits) : '—';

/** oncely's time to all started ÷ the peer's, same backend and node count; bounds when one did not finish. */
function ratio(oncely: RunResult | undefined, peer: RunResult, fireTimeoutS: number): string {
  if (!oncely?.fire || !peer.fire) return '—';
  const limit = fireTimeoutS * 1000;
  const a = oncely.allStartedMs;
  const b = peer.allStartedMs;
  if (a !== undefined && b !== undefined) return (a / b).toFixed(2);
  if (a === undefined && b !== undefined) return `> ${(limit / b).toFixed(2)}`;
  if (a !== undefined && b === undefined) return `< ${(a / limit).toFixed(2)}`;
  return '—';
}

/** The sum of a list of figures, `undefined` when there is none. */
function sum(xs: readonly number[] | undefined): number | undefined {
  return xs === undefined || xs.length === 0 ? undefined : xs.reduce((a, b) => a + b, 0);
}

/** CPU seconds spread over the occurrences started, in µs each (the issue's budget unit). */
function perOccUs(cpuS: number | undefined, started: number): string {
  return cpuS === undefined || started === 0 ? '—' : int((cpuS * 1e6) / started);
}

/**
 * Node and server CPU per occurrence less what the same processes spend idle over as long a
 * window (the idle phase's rate): the fan-out's own cost, comparable between a burst (a window of
 * ~20 s) and a spread fan-out (jitter: minutes of polling in the window).
 */
function netOfIdle(r: RunResult, started: number): string {
  if (!r.idle || r.windowS === undefined || started === 0) return '—';
  const node = sum(r.nodeCpuS);
  const net = (cpuS: number | undefined, idleMsPerS: number) =>
    cpuS === undefined ? undefined : cpuS - (idleMsPerS * r.windowS!) / 1000;
  return `${perOccUs(net(node, r.idle.nodeCpuMsPerS), started)} / ${perOccUs(net(r.serverCpuS, r.idle.serverCpuMsPerS), started)}`;
}

function fanOutRow(r: RunResult, all: RunResult[], o: Options): string {
  const label = `| ${r.backend} | ${SYSTEMS[r.system].label} | ${r.nodes} |`;
  const seedRate = r.seedMs > 0 ? int(r.seeded / (r.seedMs / 1000)) : '—';
  if (!r.fire)
    return `${label} ${seedRate} | ${cell(r.failure ?? 'not measured')} | | | | | | | | | | | | | |`;
  const f = r.fire;
  const started =
    f.started === f.due ? int(f.started) : `${int(f.started)} of ${int(f.due)} by ${o.fireTimeoutS} s`;
  const oncely = all.find((x) => x.system === 'oncely' && x.backend === r.backend && x.nodes === r.nodes);
  const vs = r.system === 'oncely' ? '' : ratio(oncely, r, o.fireTimeoutS);
  const rt =
    r.storeCallsPerOcc !== undefined
      ? `${fixed(r.roundTripsPerOcc, 2)} (${fixed(r.storeCallsPerOcc, 2)} store calls)`
      : fixed(r.roundTripsPerOcc, 2);
  return (
    `${label} ${seedRate} | ${started} | ${seconds(f.p50)} | ${seconds(f.p99)} | ${seconds(f.max)} | ` +
    `${int(f.duplicates)}${f.unexpected > 0 ? ` (+${int(f.unexpected)} unexpected)` : ''} | ${rt} | ` +
    `${fixed(r.writesPerOcc, 2)} | ${perOccUs(sum(r.nodeCpuS), f.started)} | ${perOccUs(r.serverCpuS, f.started)} | ` +
    `${netOfIdle(r, f.started)} | ` +
    `${(r.nodeCpuS ?? []).map((c, i) => `${fixed(c, 1)} (${fixed(r.nodeMainCpuS?.[i], 1)})`).join(' / ')} | ` +
    `${(r.nodeRssMiB ?? []).map((m, i) => `${fixed(m, 0)} (${fixed(r.nodePeakRssMiB?.[i], 0)})`).join(' / ')} | ` +
    `${fixed(r.serverCpuS, 1)} | ${vs} |`
  );
}

function idleRow(r: RunResult): string {
  const label = `| ${r.backend} | ${SYSTEMS[r.system].label} | ${r.nodes} |`;
  if (!r.idle) {
    const why = r.failure ? 'not measured' : 'not measured: fan-out unfinished';
    return `${label} ${why} | | | |`;
  }
  const i = r.idle;
  const rt =
    i.storeCallsPerS !== undefined
      ? `${fixed(i.roundTripsPerS, 1)} (${fixed(i.storeCallsPerS, 1)} store calls)`
      : fixed(i.roundTripsPerS, 1);
  return `${label} ${rt} | ${int(i.rowsReadPerS)} | ${fixed(i.nodeCpuMsPerS, 0)} | ${fixed(i.serverCpuMsPerS, 0)} |`;
}

function render(
  results: RunResult[],
  o: Options,
  servers: Map<Backend, string>,
  runtimes: Map<SystemName, Runtime | string>,
  started: Date,
  load: number,
): string {
  const setups = new Map<SystemName, RunResult>();
  for (const r of results)
    if (!setups.has(r.system) || (r.nodeInfo && !setups.get(r.system)!.nodeInfo)) setups.set(r.system, r);
  const systems = [...setups.keys()];
  const lines: string[] = [
    `Run ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC${o.quick ? ' (--quick)' : ''}: ` +
      `${int(o.due)} schedules due at one instant + ${int(o.other)} due at other times; ` +
      `nodes ${o.nodes.join(', ')}; ` +
      (o.warm > 0
        ? `warm-up: ${int(o.warm)} more due together one minute before, in the same processes (--warm; started by T − 2 s: ${results.map((r) => `${r.system} ×${r.nodes} ${int(r.warmStarted ?? 0)}`).join(', ')}); `
        : '') +
      `fan-out deadline ${o.fireTimeoutS} s, seeding deadline ${o.seedTimeoutS} s, idle window ${o.idleS} s.`,
    '',
    `Machine: ${machineLine(load)}.`,
    '',
    `Servers: ${[...servers].map(([b, v]) => `${b}: ${v}`).join('; ')} (throwaway, started by the bench; PostgreSQL fsync=off, Redis without persistence).`,
    '',
    "Systems (each a devDependency; node processes are separate `node --import tsx` processes on this host; oncely's load the built `dist/` of this checkout, the peers their published JavaScript):",
    '',
  ];
  for (const s of systems) {
    const r = setups.get(s)!;
    const version = SYSTEMS[s].pkg ? ` ${packageVersion(SYSTEMS[s].pkg!)}` : ' (this checkout)';
    const rt = runtimes.get(s);
    lines.push(
      `- ${SYSTEMS[s].label}${version}: seeding by ${r.seedMode || '—'}; nodes: ${r.nodeInfo || '—'}.` +
        (typeof rt === 'string' ? ` Not run: ${rt}.` : rt?.why ? ` ${rt.why}.` : ''),
    );
  }
  lines.push(
    '',
    'Method: per backend, node count and system a fresh database (PostgreSQL) or key prefix (Redis) on one ' +
      'throwaway server. A seeder process writes the schedules (per-user daily crons `M H * * *` in UTC, ' +
      'America/New_York, Europe/Berlin, Asia/Kolkata and Australia/Sydney; the due ones all map to the fire ' +
      'instant T, a minute boundary; the others to minutes 4 to 23 hours away), then the node processes start ' +
      'and T comes. Lateness = host time when a handler started − T (every process on one host and clock; each ' +
      'handler only records its start). Duplicates = starts beyond the first of one (schedule, fire time). ' +
      'Round trips = driver calls of all node processes, client side (pg queries; ioredis commands, a ' +
      'pipeline or MULTI once), and for oncely also calls through its Store interface; rows written = on the ' +
      `server (PostgreSQL: ${'`pg_stat_database`'} inserted + updated + deleted in the run's database; Redis: ` +
      'write commands, script-internal ones included); both per occurrence started, over the fan-out window ' +
      '(from T − 2 s to the last start plus a settling pause of 11 s on PostgreSQL, 3 s on Redis, polling ' +
      'during it included). CPU = user + system time of each node process (/proc) in that window, in parentheses its main ' +
      'thread’s (the rest is V8’s compiler and GC workers and libuv’s threads); RSS = its ' +
      'resident set at the end of the window (peak since it started); server CPU = the server processes’ thread time; net of idle = ' +
      'that CPU less what the same processes spend per second idle (the idle phase below) times the window: the fan-out’s own cost, ' +
      'comparable between a burst and a fan-out spread over minutes. Idle = the following ' +
      `${o.idleS} s with everything stored and nothing due (rows read: PostgreSQL tup_returned, Redis key lookups).`,
    '',
    '### Fan-out',
    '',
    '| backend | system | nodes | seeded/s | started | p50 s | p99 s | max s (all started) | duplicates | round trips/occ. | rows written/occ. | node CPU µs/occ. (all nodes) | server CPU µs/occ. | node / server CPU µs/occ., net of idle | CPU s per node (main thread) | RSS MiB per node (peak) | server CPU s | oncely ÷ this (time to all started) |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...results.map((r) => fanOutRow(r, results, o)),
    '',
    '### Idle (everything stored, nothing due)',
    '',
    '| backend | system | nodes | round trips/s (all nodes) | rows read/s | CPU ms/s (all nodes) | server CPU ms/s |',
    '|---|---|--:|--:|--:|--:|--:|',
    ...results.map(idleRow),
    '',
  );
  const notes: string[] = [];
  for (const r of results) {
    const where = `${r.backend} ${SYSTEMS[r.system].label} ×${r.nodes}`;
    if (r.fire && r.nodes > 1)
      notes.push(`${where}: starts per node ${[...r.fire.perNode.values()].map(int).join(' / ') || '—'}`);
    if (r.replans > 0)
      notes.push(
        `${where}: node start-up ran past the planned instant; due schedules rewritten ${r.replans}×`,
      );
    if (r.failure && r.fire) notes.push(`${where}: ${cell(r.failure)}`);
    for (const b of r.busy) notes.push(`${where}: ${b}`);
  }
  for (const n of notes) lines.push(`- ${n}`);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------

function list<T extends string>(text: string, allowed: readonly T[], what: string): T[] {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const i of items)
    if (!allowed.includes(i as T)) throw new Error(`unknown ${what} ${i}; known: ${allowed.join(', ')}`);
  return items as T[];
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      due: { type: 'string' },
      other: { type: 'string' },
      nodes: { type: 'string' },
      backends: { type: 'string', default: 'postgres,redis' },
      peers: { type: 'string' },
      concurrency: { type: 'string', default: '1000' },
      lead: { type: 'string' },
      'fire-timeout': { type: 'string' },
      'seed-timeout': { type: 'string' },
      idle: { type: 'string' },
      quick: { type: 'boolean', default: false },
      variant: { type: 'string' },
      warm: { type: 'string' },
      verbose: { type: 'boolean', default: false },
    },
  });
  const q = values.quick;
  const num = (v: string | undefined, quick: number, full: number) => {
    const n = Number(v ?? (q ? quick : full));
    if (!Number.isFinite(n) || n < 0) throw new Error(`not a number: ${v}`);
    return n;
  };
  return {
    // --quick (issue 30): the full fan-out against a tenth of the stored schedules, on 4 nodes
    // only, so that a change to the claim path can be checked in under 20 minutes.
    due: num(values.due, 100_000, 100_000),
    other: num(values.other, 100_000, 900_000),
    nodes: (values.nodes ?? (q ? '4' : '1,2,4')).split(',').map(Number),
    backends: list(values.backends, ['postgres', 'redis'] as const, 'backend'),
    peers: list(values.peers ?? PEERS.join(','), PEERS, 'peer'),
    concurrency: num(values.concurrency, 1000, 1000),
    leadS: num(values.lead, 5, 20),
    fireTimeoutS: num(values['fire-timeout'], 120, 900),
    seedTimeoutS: num(values['seed-timeout'], 300, 3600),
    idleS: num(values.idle, 10, 60),
    quick: q,
    // --variant jitter|rate (issue 32): oncely's schedules with jitter '5m', or its job with a
    // rateLimit; --variant queue: its job with overlap 'queue', claimed occurrence by occurrence
    // (not in pages). A run so changed is printed only, as a resized one is.
    ...(values.variant !== undefined && { variant: variantOf(values.variant) }),
    warm: num(values.warm, 0, 0),
    resized:
      values.due !== undefined ||
      values.other !== undefined ||
      values.nodes !== undefined ||
      values.variant !== undefined ||
      values.warm !== undefined ||
      // More Node.js flags (SCALE_NODE_ARGS, below): not the profile's processes either.
      (process.env['SCALE_NODE_ARGS'] ?? '').trim() !== '',
    verbose: values.verbose,
  };
}

function variantOf(v: string): 'jitter' | 'rate' | 'queue' {
  if (v === 'jitter' || v === 'rate' || v === 'queue') return v;
  throw new Error(`--variant takes jitter, rate or queue; got ${v}`);
}

async function main(): Promise<void> {
  const o = options();
  // oncely's node processes load the built package (oncely-node.ts): build it from this checkout.
  process.stderr.write('building dist/ (npm run build)\n');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  const started = new Date();
  const load = os.loadavg()[0] ?? Number.NaN;
  const results: RunResult[] = [];
  const servers = new Map<Backend, string>();
  // The Node.js each system's processes run on (node-runtime.ts), settled once per system: its
  // runtime, or why there is none (that system's rows then say so; the others run).
  const runtimes = new Map<SystemName, Promise<Runtime>>();
  const settled = new Map<SystemName, Runtime | string>();
  const runtime = (system: SystemName): Promise<Runtime> => {
    let r = runtimes.get(system);
    if (!r) {
      const pkg = SYSTEMS[system].pkg;
      const range = pkg ? enginesNode(ROOT, pkg) : undefined;
      const what = pkg ? `${pkg} ${packageVersion(pkg)}` : SYSTEMS[system].label;
      r = runtimeFor(ROOT, range, what).then(
        (ok) => {
          settled.set(system, ok);
          return ok;
        },
        (err: unknown) => {
          const why = err instanceof Error ? err.message : String(err);
          settled.set(system, why);
          throw new Error(why);
        },
      );
      runtimes.set(system, r);
    }
    return r;
  };
  // Interrupted: stop the throwaway server (the child processes exit when this one does).
  let current: BenchServer | undefined;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping\n`);
      void (current?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
    });
  }
  for (const backend of o.backends) {
    let server: BenchServer | undefined;
    try {
      server = await provision(backend);
      current = server;
      const probe =
        backend === 'postgres' ? await postgresStats(server.url, 'postgres') : await redisStats(server.url);
      servers.set(backend, probe.version);
      await probe.close();
      const systems = (['oncely', ...o.peers] as SystemName[]).filter((s) =>
        SYSTEMS[s].backends.includes(backend),
      );
      // Seeding does not depend on the node count: a system not seeded in time once is not tried again.
      const unseeded = new Map<SystemName, string>();
      for (const nodes of o.nodes) {
        for (const system of systems) {
          const skipped = unseeded.get(system);
          if (skipped !== undefined) {
            results.push(notRun(backend, system, nodes, o, skipped));
            continue;
          }
          let execPath: string;
          try {
            execPath = (await runtime(system)).execPath;
          } catch (err) {
            results.push(notRun(backend, system, nodes, o, `not run: ${(err as Error).message}`));
            continue;
          }
          const r = await runOne(server, backend, system, nodes, o, execPath);
          if (r.failure?.startsWith('seeded '))
            unseeded.set(system, `not run: seeding did not finish in time with ${nodes} node(s)`);
          results.push(r);
        }
      }
    } catch (err) {
      process.stderr.write(`${backend}: unavailable: ${reason(err)}\n`);
      servers.set(backend, `unavailable: ${reason(err)}`);
    } finally {
      await server?.stop().catch(() => {});
    }
    // A long run stopped later still leaves the rows measured so far, in the log (not in
    // BENCHMARKS.md: that section is only ever written whole).
    if (backend !== o.backends.at(-1))
      console.log(
        `\n(rows so far, after ${backend})\n\n${render(results, o, servers, settled, started, load)}`,
      );
  }
  // A run with its sizes changed by hand (quick or full) is a smoke run: printed only. (A full
  // run resized to one node once replaced the published 1,000,000-stored table with its own.)
  const body = render(results, o, servers, settled, started, load);
  publish(ROOT, o.quick ? QUICK_HEADING : HEADING, body, o.resized);
}

runMain(main);
