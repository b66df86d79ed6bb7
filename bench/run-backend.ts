/**
 * Benchmarks one backend: opens oncely's store and the floors on one server, warms them up,
 * counts round trips, measures the rounds and the contended cell, and turns it all into a
 * {@link BackendResult} (rows, ratios, targets, notes). Never throws: what cannot be measured is
 * reported as unavailable.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropPrefixed } from './cleanup.js';
import { type RequestCounter, requestCounter } from './counters.js';
import { nodeCpuUs, serverCpuReader } from './cpu.js';
import { opsPerSecond, runCell, warmUp } from './measure.js';
import { type BackendResult, type RowResult, type TargetResult, unavailableRow } from './report.js';
import { type BackendName, type BenchServer, reason } from './servers.js';
import { formatRate, median, quantile } from './stats.js';
import { CONCURRENCY, LABEL, openSubjects, ROTATION, type Subject } from './subjects.js';

export { CONCURRENCY } from './subjects.js';

/** The repository root (bench/ is one level down). */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const FLOOR_TARGET = 1.15;
export const REDLOCK_TARGET = 1.3;

export interface Plan {
  rounds: number;
  /** Length of one measured cell. */
  cellMs: number;
  /** Warm-up ops at c=1 (and four times as many at c=32). */
  warmUpOps: number;
  /** Ops of the round-trip counting pass. */
  countOps: number;
  /** Print every cell's throughput. */
  verbose: boolean;
}

function driverVersion(name: string): string {
  try {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8'));
    return `${name} ${String(pkg.version)}`;
  } catch {
    return name;
  }
}

const DRIVER: Record<BackendName, string> = {
  memory: 'in-process',
  sqlite: 'better-sqlite3',
  postgres: 'pg',
  mysql: 'mysql2',
  redis: 'ioredis',
};

function connectionsText(backend: BackendName, poolSize: number, poolNote: string): string {
  const how = poolNote === '' ? '' : ` (${poolNote})`;
  switch (backend) {
    case 'memory':
      return '';
    case 'sqlite':
      return `oncely and the floor each on their own better-sqlite3 connection to one file, WAL, synchronous=NORMAL${how}`;
    case 'redis':
      return `oncely, the floor and redlock each on one ioredis connection${how}`;
    default:
      return `pools of ${poolSize} connections for oncely${how} and for each floor`;
  }
}

/** Median over rounds of `num[r] / den[r]`. */
function pairedRatio(num: readonly number[], den: readonly number[]): number {
  return median(num.map((n, i) => n / (den[i] ?? Number.NaN)));
}

export async function benchBackend(
  backend: BackendName,
  server: Promise<BenchServer>,
  plan: Plan,
): Promise<BackendResult> {
  const result: BackendResult = { backend, server: '', setup: '', rows: [], targets: [], notes: [] };
  let srv: BenchServer;
  try {
    srv = await server;
  } catch (err) {
    return { ...result, unavailable: `no server: ${reason(err)}` };
  }
  const prefix = `bench_${randomBytes(4).toString('hex')}_`;
  let counter: RequestCounter | undefined;
  const opened = await openSubjects(backend, srv.url, prefix);
  const { subjects, missing, closers } = opened;
  try {
    result.server =
      backend === 'memory'
        ? `MemoryStore, in-process (Node ${process.version})`
        : `${opened.floorVersion ?? backend} via ${driverVersion(DRIVER[backend])}` +
          (backend === 'redis' ? ` and ${driverVersion('@sesamecare-oss/redlock')}` : '');
    result.setup = [
      srv.origin,
      connectionsText(backend, opened.poolSize, opened.poolNote),
      opened.sequentialNote,
    ]
      .filter((t) => t !== '')
      .join('; ');

    if (subjects.length === 0) {
      const why = missing.find((m) => m.label === LABEL.floorLock)?.unavailable ?? 'nothing could be opened';
      return { ...result, unavailable: why.replace(/^unavailable: /, '') };
    }
    const live = () => subjects.filter((s) => s.failed === undefined);
    const guard = async (s: Subject, run: () => Promise<void>) => {
      if (s.failed !== undefined) return;
      try {
        await run();
      } catch (err) {
        s.failed = `failed: ${reason(err)}`;
        console.error(`  ${backend} / ${s.label}: ${s.failed}`);
      }
    };

    const serverCpu = backend === 'memory' || backend === 'sqlite' ? undefined : serverCpuReader(srv.url);
    process.stdout.write(`${backend}: warm-up`);
    for (const s of live()) {
      await guard(s, async () => {
        await warmUp(s.op, 1, plan.warmUpOps);
        if (!s.sequential) await warmUp(s.op, CONCURRENCY, plan.warmUpOps * 4);
      });
    }
    try {
      counter = await requestCounter(backend);
    } catch (err) {
      result.notes.push(`round trips/op not counted: ${reason(err)}`);
    }
    if (counter) {
      const c = counter;
      for (const s of live()) {
        await guard(s, async () => {
          const before = await c.read();
          await warmUp(s.op, 1, plan.countOps);
          s.requestsPerOp = ((await c.read()) - before) / plan.countOps;
        });
      }
    }
    for (let round = 0; round < plan.rounds; round++) {
      process.stdout.write(`, round ${round + 1}/${plan.rounds}`);
      // The order rotates every round (and runs backwards every other round), so each row takes
      // every position — the first cell after the c=32 phase, next to each other row — alike.
      const rows = live();
      const shift = round % rows.length;
      const rotated = [...rows.slice(shift), ...rows.slice(0, shift)];
      const order = round % 2 === 0 ? rotated : rotated.reverse();
      for (const concurrency of [1, CONCURRENCY]) {
        for (const s of order) {
          if (concurrency > 1 && s.sequential) continue;
          await guard(s, async () => {
            // A short unmeasured burst first: the cell starts on warm connections and caches.
            await warmUp(s.op, concurrency, concurrency * 20);
            const nodeBefore = nodeCpuUs();
            const serverBefore = serverCpu?.();
            const cell = await runCell(s.op, {
              concurrency,
              durationMs: plan.cellMs,
              recordLatency: concurrency === 1,
            });
            const nodeUsed = nodeCpuUs() - nodeBefore;
            const serverUsed = serverBefore === undefined ? Number.NaN : serverCpu!() - serverBefore;
            if (cell.refused > 0) throw new Error(`${cell.refused} uncontended acquisitions were refused`);
            if (plan.verbose) {
              console.log(
                `\n  round ${round + 1} c=${concurrency} ${s.label}: ${formatRate(opsPerSecond(cell))} ops/s`,
              );
            }
            if (concurrency === 1) {
              for (const l of cell.latencies) s.latencies.push(l);
              s.rate1.push(opsPerSecond(cell));
            } else {
              s.rate32.push(opsPerSecond(cell));
              s.nodeCpu32.push(nodeUsed / cell.ops);
              s.serverCpu32.push(serverUsed / cell.ops);
            }
          });
        }
      }
    }
    process.stdout.write(', contended');
    const contended: string[] = [];
    for (const s of live()) {
      const op = s.contended;
      if (!op) continue;
      await guard(s, async () => {
        const cell = await runCell(op, {
          concurrency: CONCURRENCY,
          durationMs: plan.cellMs,
          recordLatency: false,
        });
        contended.push(
          `${s.label} ${formatRate(opsPerSecond(cell))} attempts/s ` +
            `(acquired ${cell.acquired.toLocaleString('en-US')}, refused ${cell.refused.toLocaleString('en-US')})`,
        );
      });
    }
    process.stdout.write('\n');

    // Rows and ratios: each row against its own floor, round by round.
    const baseline = (s: Subject) => subjects.find((b) => b.label === s.baseline && b.failed === undefined);
    const rows = new Map<string, RowResult>();
    for (const s of subjects) {
      if (s.failed !== undefined) {
        rows.set(s.label, unavailableRow(s.label, s.failed));
        continue;
      }
      rows.set(s.label, {
        label: s.label,
        p50Ms: quantile(s.latencies, 0.5),
        p99Ms: quantile(s.latencies, 0.99),
        rate1: median(s.rate1),
        rate32: median(s.rate32),
        ratio1: pairedRatio(baseline(s)?.rate1 ?? [], s.rate1),
        ratio32: pairedRatio(baseline(s)?.rate32 ?? [], s.rate32),
        requestsPerOp: s.requestsPerOp,
        nodeCpuUs: median(s.nodeCpu32),
        serverCpuUs: median(s.serverCpu32),
      });
    }
    for (const m of missing) rows.set(m.label, m);
    const order: string[] = [
      LABEL.oncely,
      LABEL.floorLock,
      LABEL.roundTrip,
      ...(backend === 'redis' ? [LABEL.redlock] : []),
      LABEL.defaults,
      LABEL.floorSequential,
    ];
    result.rows = order.map((label) => rows.get(label) ?? unavailableRow(label, 'unavailable: not measured'));

    // Targets.
    const oncelyRow = rows.get(LABEL.oncely);
    const floorRow = rows.get(LABEL.floorLock);
    const measured = (r: RowResult | undefined): r is RowResult =>
      r !== undefined && r.unavailable === undefined;
    const targets: TargetResult[] = [];
    if (measured(oncelyRow) && measured(floorRow)) {
      if (backend === 'memory') {
        result.notes.push(
          `the ${FLOOR_TARGET.toFixed(2)}× target is for stores with I/O; in-process there is nothing to amortise ` +
            `oncely's per-call work against, so these ratios are its CPU cost relative to a bare Map`,
        );
      } else {
        for (const [c, ratio] of [
          [1, oncelyRow.ratio1],
          [CONCURRENCY, oncelyRow.ratio32],
        ] as const) {
          targets.push({
            text: `oncely time/op ≤ ${FLOOR_TARGET.toFixed(2)}× the hand-written lock at c=${c}: ${ratio.toFixed(2)}×`,
            met: ratio <= FLOOR_TARGET,
          });
        }
      }
      const us = (rate: number) => 1e6 / rate;
      const diff = us(oncelyRow.rate1) - us(floorRow.rate1);
      result.notes.push(
        `at c=1 an oncely cycle takes ${us(oncelyRow.rate1).toFixed(1)} µs on average, the hand-written lock's ` +
          `${us(floorRow.rate1).toFixed(1)} µs (${diff >= 0 ? '+' : '−'}${Math.abs(diff).toFixed(1)} µs)`,
      );
    } else {
      targets.push({
        text: `oncely ≤ ${FLOOR_TARGET.toFixed(2)}× the hand-written lock`,
        met: 'not measured',
      });
    }
    if (backend !== 'memory') {
      const defaults = rows.get(LABEL.defaults);
      const what = `oncely via openStore(url) defaults time/op ≤ ${FLOOR_TARGET.toFixed(2)}× the 1-connection hand-written lock, sequential, ${ROTATION} names`;
      targets.push(
        measured(defaults) && measured(rows.get(LABEL.floorSequential))
          ? { text: `${what}: ${defaults.ratio1.toFixed(2)}×`, met: defaults.ratio1 <= FLOOR_TARGET }
          : { text: what, met: 'not measured' },
      );
    }
    if (backend === 'redis') {
      const oncely = subjects.find((s) => s.label === LABEL.oncely && s.failed === undefined);
      const redlock = subjects.find((s) => s.label === LABEL.redlock && s.failed === undefined);
      if (oncely && redlock) {
        const ratio = pairedRatio(oncely.rate32, redlock.rate32);
        targets.push({
          text: `oncely throughput ≥ ${REDLOCK_TARGET.toFixed(1)}× redlock's at c=${CONCURRENCY}: ${ratio.toFixed(2)}×`,
          met: ratio >= REDLOCK_TARGET,
        });
      } else {
        targets.push({
          text: `oncely throughput ≥ ${REDLOCK_TARGET.toFixed(1)}× redlock's`,
          met: 'not measured',
        });
      }
    }
    result.targets = targets;
    if (contended.length > 0) {
      result.notes.push(
        `contended, all ${CONCURRENCY} workers on one name, one cell: ${contended.join('; ')}`,
      );
    }
  } catch (err) {
    return { ...result, unavailable: `failed: ${reason(err)}` };
  } finally {
    await counter?.close().catch(() => {});
    for (const close of closers.reverse()) await close().catch(() => {});
    if (opened.oncelyOpened) {
      await dropPrefixed(backend, srv.url, prefix).catch((err) => {
        result.notes.push(`could not drop oncely's ${prefix}* objects: ${reason(err)}`);
      });
    }
  }
  return result;
}
