/**
 * `npm run bench:scheduler`: how late handlers start after their fire time, and how many store
 * round trips each occurrence costs, with three scheduler nodes (three store instances) on one
 * store per backend.
 *
 * - one job: `every: '1s'` for `--seconds` (default 12) seconds.
 * - 1,000 jobs due at the same second: `every: '5s'` jobs, five fire times each (three with
 *   --quick; node concurrency raised to 1,000 so that slots are not what is measured); on every
 *   backend but memory also with the three nodes as three processes (bench/scheduler-node.ts), as
 *   a cluster runs them. The first fire time after start (cold processes) is reported apart.
 * Everything runs the built package (dist/, built first), as users run it.
 * Lateness = host time at handler start − fire time (all nodes run in this process on one host,
 * and every backend's clock here is this host's clock). Round trips = calls into each node's
 * store (one call = one round trip; an acquire batch counts once), divided by occurrences run.
 * Polling costs the same with or without work, so it is also measured on its own (the same three
 * nodes with nothing due) and subtracted to give the cost of the occurrence path itself.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
// The built package (dist/), as users run it, in this process and in the node processes: tsx's
// transform of the sources wraps every closure in a naming helper that costs the hot path a few
// per cent. The npm script builds dist/ before this module loads (a static import of a missing
// dist/ fails before main() could build it: a fresh clone has none).
import { createScheduler, openStore, type Scheduler } from '../dist/index.js';
import type { Store } from '../src/store/types.js';
import { counted } from './counted-store.js';
import { machineLine, publish, runMain } from './report.js';
import { ROOT } from './run-backend.js';
import type { NodeConfig, NodeReport } from './scheduler-node.js';
import { ALL_BACKENDS, type BackendName, provision, reason } from './servers.js';
import { formatMs, quantile } from './stats.js';

const HEADING = '## Scheduler (`npm run bench:scheduler`)';
/** Issue 30's target for 1,000 jobs due together on 3 node processes: p99 lateness, ms (it was 250). */
const THOUSAND_P99_MS = 100;
const HERE = dirname(fileURLToPath(import.meta.url));

interface CaseResult {
  occurrences: number;
  duplicates: number;
  p50: number;
  p99: number;
  max: number;
  /** p99 of the first fire time in the window alone, and of the later ones (steady state). */
  firstP99: number;
  laterP99: number;
  /** How many fire times the window saw. */
  fireTimes: number;
  roundTrips: number;
  /** Store calls per second by the three nodes when nothing is due. */
  idlePerSecond: number;
  /** (calls − idle calls over the same time) ÷ occurrences: claim, start and finish. */
  pathRoundTrips: number;
}

/** Store calls per second of three idle nodes (one job defined, due in an hour). */
async function idleRate(url: string, prefix: string, seconds: number): Promise<number> {
  const counter = { calls: 0 };
  const stores: Store[] = [];
  const nodes: Scheduler[] = [];
  for (let n = 0; n < 3; n++) {
    const store = await openStore(url, { prefix });
    stores.push(store);
    const scheduler = createScheduler({ store: counted(store, counter), node: `idle-${n}` });
    scheduler.define('idle', { every: '1h' }, () => {});
    nodes.push(scheduler);
  }
  await Promise.all(nodes.map((s) => s.start()));
  counter.calls = 0;
  const t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const rate = counter.calls / ((performance.now() - t0) / 1000);
  await Promise.all(nodes.map((s) => s.stop()));
  await Promise.all(stores.map((s) => s.close()));
  return rate;
}

/** One measured case: three nodes on `url` under `prefix`, `jobs` jobs `every`, for `seconds`. */
interface CaseSpec {
  url: string;
  prefix: string;
  jobs: number;
  every: string;
  seconds: number;
  concurrency: number;
  /** Store calls per second of three idle nodes (idleRate), subtracted for the occurrence path. */
  idlePerSecond: number;
}

/**
 * A case's figures from the starts seen (lateness and fire time of each, runs per occurrence key)
 * and the store calls made in `elapsed` s.
 */
function summarize(
  lateness: number[],
  fireTimes: number[],
  seen: Map<string, number>,
  calls: number,
  elapsed: number,
  idlePerSecond: number,
): CaseResult {
  const first = Math.min(...fireTimes);
  const of = (later: boolean) => lateness.filter((_, i) => (fireTimes[i] !== first) === later);
  return {
    occurrences: seen.size,
    duplicates: [...seen.values()].filter((v) => v > 1).length,
    p50: quantile(lateness, 0.5),
    p99: quantile(lateness, 0.99),
    max: Math.max(...lateness),
    firstP99: quantile(of(false), 0.99),
    laterP99: quantile(of(true), 0.99),
    fireTimes: new Set(fireTimes).size,
    roundTrips: calls / Math.max(1, seen.size),
    idlePerSecond,
    pathRoundTrips: Math.max(0, calls - idlePerSecond * elapsed) / Math.max(1, seen.size),
  };
}

async function runCase({
  url,
  prefix,
  jobs,
  every,
  seconds,
  concurrency,
  idlePerSecond,
}: CaseSpec): Promise<CaseResult> {
  const counter = { calls: 0 };
  const stores: Store[] = [];
  const nodes: Scheduler[] = [];
  const lateness: number[] = [];
  const fireTimes: number[] = [];
  const seen = new Map<string, number>();
  for (let n = 0; n < 3; n++) {
    const store = await openStore(url, { prefix });
    stores.push(store);
    const scheduler = createScheduler({ store: counted(store, counter), node: `bench-${n}`, concurrency });
    for (let j = 0; j < jobs; j++) {
      scheduler.define(`job-${j}`, { every }, (ctx) => {
        lateness.push(performance.timeOrigin + performance.now() - ctx.fireTime.getTime());
        fireTimes.push(ctx.fireTime.getTime());
        const key = `${ctx.job}@${ctx.fireTime.getTime()}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
      });
    }
    nodes.push(scheduler);
  }
  await Promise.all(nodes.map((s) => s.start()));
  counter.calls = 0;
  const t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const calls = counter.calls;
  const elapsed = (performance.now() - t0) / 1000;
  await Promise.all(nodes.map((s) => s.stop()));
  await Promise.all(stores.map((s) => s.close()));
  return summarize(lateness, fireTimes, seen, calls, elapsed, idlePerSecond);
}

/** The result of runCase with each of the three nodes in a process of its own (bench/scheduler-node.ts). */
async function runProcesses(spec: CaseSpec): Promise<CaseResult> {
  const { url, prefix, jobs, every, concurrency } = spec;
  const children: ChildProcess[] = [];
  const reports: Promise<NodeReport>[] = [];
  const ready: Promise<void>[] = [];
  try {
    for (let n = 0; n < 3; n++) {
      const child = fork(join(HERE, 'scheduler-node.ts'), [], {
        // SCHED_CPU_PROF=<dir>: each node process writes a V8 CPU profile there (where the time goes),
        // sampled every 200 µs (a fire time's work is a few hundred ms per process).
        execArgv: [
          '--import',
          'tsx',
          ...(process.env['SCHED_CPU_PROF']
            ? ['--cpu-prof', `--cpu-prof-dir=${process.env['SCHED_CPU_PROF']}`, '--cpu-prof-interval=200']
            : []),
        ],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.push(child);
      const said = <T>(key: string) =>
        new Promise<T>((resolve, reject) => {
          child.on('message', (m: Record<string, unknown>) => {
            if (key in m) resolve(m[key] as T);
            else if ('error' in m) reject(new Error(`node ${n}: ${String(m['error'])}`));
          });
          child.on('exit', (code) => reject(new Error(`node ${n} exited (${code}) before "${key}"`)));
        });
      ready.push(said<boolean>('ready').then(() => {}));
      reports.push(said<NodeReport>('report'));
      // A rejection noticed only after the window (the await below) must not be unhandled meanwhile.
      reports.at(-1)!.catch(() => {});
      const config: NodeConfig = { url, prefix, node: `bench-${n}`, jobs, every, concurrency };
      child.send({ config });
    }
    await Promise.all(ready);
    for (const c of children) c.send({ go: true });
    const t0 = performance.now();
    await new Promise((resolve) => setTimeout(resolve, spec.seconds * 1000));
    const elapsed = (performance.now() - t0) / 1000;
    for (const c of children) c.send({ stop: true });
    const all = await Promise.all(reports);
    // Each exits once it has reported (and written its CPU profile, with SCHED_CPU_PROF): the
    // `finally` below kills only one that has not within 10 s.
    await Promise.race([
      Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined))),
      new Promise((resolve) => setTimeout(resolve, 10_000)),
    ]);
    const lateness = all.flatMap((r) => r.lateness);
    // The keys are `<job>@<fire time>`, one per start, in the order of `lateness`.
    const fireTimes = all.flatMap((r) => r.keys.map((k) => Number(k.slice(k.lastIndexOf('@') + 1))));
    const seen = new Map<string, number>();
    for (const r of all) for (const k of r.keys) seen.set(k, (seen.get(k) ?? 0) + 1);
    const calls = all.reduce((sum, r) => sum + r.calls, 0);
    return summarize(lateness, fireTimes, seen, calls, elapsed, spec.idlePerSecond);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      backends: { type: 'string', default: ALL_BACKENDS.join(',') },
      seconds: { type: 'string', default: '12' },
      quick: { type: 'boolean', default: false },
    },
  });
  const backends = values.backends.split(',').map((b) => b.trim()) as BackendName[];
  const seconds = values.quick ? 4 : Number(values.seconds);
  const started = new Date();
  const load = os.loadavg()[0] ?? Number.NaN;
  const rows: string[] = [];
  const verdicts: string[] = [];
  const verdict = (ok: boolean) => (ok ? 'met' : '**MISSED**');
  for (const backend of backends) {
    let server: Awaited<ReturnType<typeof provision>> | undefined;
    try {
      server = await provision(backend);
      const url = backend === 'memory' ? 'memory:bench-scheduler' : server.url;
      process.stderr.write(`${backend}: idle…`);
      const idle = await idleRate(url, `bsi_${process.pid}_`, Math.min(seconds, 6));
      process.stderr.write(' one job…');
      const one = await runCase({
        url,
        prefix: `bs1_${process.pid}_`,
        jobs: 1,
        every: '1s',
        seconds,
        concurrency: 16,
        idlePerSecond: idle,
      });
      process.stderr.write(' 1,000 jobs…');
      const thousand = {
        url,
        jobs: 1000,
        every: '5s',
        // Five fire times (three with --quick): the first after start runs on cold processes.
        seconds: values.quick ? 14 : 26,
        concurrency: 1000,
        idlePerSecond: idle,
      };
      const many = await runCase({ ...thousand, prefix: `bsk_${process.pid}_` });
      // Three processes (a memory store lives in one process: not for it).
      let apart: CaseResult | undefined;
      if (backend !== 'memory') {
        process.stderr.write(' 1,000 jobs, 3 processes…');
        apart = await runProcesses({ ...thousand, prefix: `bsp_${process.pid}_` });
      }
      process.stderr.write(' done\n');
      const judged = apart ?? many;
      verdicts.push(
        `- ${backend}: one job p99 ${formatMs(one.p99)} ms ≤ 20: ${verdict(one.p99 <= 20)}; ` +
          `1,000 jobs p99 after the first fire time ${formatMs(judged.laterP99)} ms ≤ ${THOUSAND_P99_MS} (${apart ? 'three node processes' : 'three nodes in one process'}): ${verdict(judged.laterP99 <= THOUSAND_P99_MS)}` +
          ` — the first fire time after start ${formatMs(judged.firstP99)} ms` +
          (apart
            ? ` (in one process: ${formatMs(many.laterP99)} ms, first ${formatMs(many.firstP99)} ms)`
            : '') +
          '; ' +
          `round trips per occurrence with 1,000 jobs ${many.roundTrips.toFixed(1)} ≤ 3: ${verdict(many.roundTrips <= 3)}; ` +
          `one job: ${one.pathRoundTrips.toFixed(1)} on the occurrence path (one claim attempt per node, ` +
          `then the in-flight record and the finishing batch on the node that runs it) + polling ` +
          `${(one.idlePerSecond / 3).toFixed(1)} calls/s per node`,
      );
      for (const [label, r] of [
        ['1 job, every 1s', one],
        ['1,000 jobs due together', many],
        ...(apart ? ([['1,000 jobs due together, 3 processes', apart]] as const) : []),
      ] as const) {
        rows.push(
          `| ${backend} | ${label} | ${r.occurrences} | ${r.fireTimes} | ${r.duplicates} | ${formatMs(r.p50)} | ${formatMs(r.p99)} | ${formatMs(r.firstP99)} | ${formatMs(r.laterP99)} | ${formatMs(r.max)} | ${r.roundTrips.toFixed(1)} | ${r.idlePerSecond.toFixed(1)} | ${r.pathRoundTrips.toFixed(2)} |`,
        );
      }
    } catch (err) {
      process.stderr.write(` unavailable: ${reason(err)}\n`);
      rows.push(`| ${backend} | unavailable: ${reason(err)} | | | | | | | | | | | |`);
    } finally {
      await server?.stop().catch(() => {});
    }
  }
  const body = [
    `Run ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC${values.quick ? ' (--quick)' : ''}.`,
    '',
    `Machine: ${machineLine(load)}.`,
    '',
    'Method: three scheduler nodes (three store instances, one process) on one store per backend; ' +
      'the "3 processes" rows run the same three nodes as three node processes (bench/scheduler-node.ts), as a cluster runs them; on this 2-core machine three node processes and the server share two cores. Both load the built package (dist/), as users run it. ' +
      'The 1,000-job case runs five fire times (three with --quick); the first after start runs on cold processes — before V8 has optimised the claim and run paths, with connection pools still filling — so its p99 is shown apart, and the target is judged on the later ones, as a cluster that runs for hours sees them, on the 3-process row where there is one (not for the in-process memory store). ' +
      'Lateness = host time at handler start − nominal fire time. Round trips = store calls by all ' +
      'three nodes while running (polls, heartbeats and claims of every node included) ÷ occurrences ' +
      'run; an acquire batch is one call. Idle = store calls per second of the same three nodes with ' +
      'nothing due (polls, heartbeats, clock reads; 1 s poll interval). Occurrence path = (calls − ' +
      'idle calls over the same time) ÷ occurrences: the claim, the in-flight record and the ' +
      `finishing batch. Targets: p99 ≤ 20 ms for one job, ≤ ${THOUSAND_P99_MS} ms for 1,000 (issue 30); ≤ 3 round trips per ` +
      'occurrence.',
    '',
    '| backend | case | occurrences | fire times | duplicates | p50 lateness | p99 lateness | p99, first fire time | p99, later fire times | max | round trips / occurrence (all) | idle calls/s (3 nodes) | occurrence path |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows,
    '',
    ...verdicts,
  ].join('\n');
  publish(ROOT, HEADING, body, values.quick);
}

runMain(main);
