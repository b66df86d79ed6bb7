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
import type { Store } from '../src/store/types.js';
import { dropPrefixed } from './cleanup.js';
import { type RequestCounter, requestCounter } from './counters.js';
import { nodeCpuUs, serverCpuReader } from './cpu.js';
import { memoryFloor } from './floors/memory.js';
import { mysqlFloor } from './floors/mysql.js';
import { postgresFloor } from './floors/postgres.js';
import { redisFloor } from './floors/redis.js';
import { redlockCompetitor } from './floors/redlock.js';
import { sqliteFloor } from './floors/sqlite.js';
import type { Floor } from './floors/types.js';
import { type Op, opsPerSecond, runCell, warmUp } from './measure.js';
import { openOncely } from './oncely.js';
import { type BackendResult, type RowResult, type TargetResult, unavailableRow } from './report.js';
import { type BackendName, type BenchServer, reason } from './servers.js';
import { formatRate, median, quantile } from './stats.js';

/** The repository root (bench/ is one level down). */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const CONCURRENCY = 32;
/** Connections per pool for the SQL servers, for oncely and for each floor alike. */
export const POOL_SIZE = 32;
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

const LABEL = {
  oncely: 'oncely',
  floorLock: 'floor: hand-written lock',
  roundTrip: 'floor: driver round trip',
  redlock: 'redlock (@sesamecare-oss/redlock)',
} as const;

/** Everything measured for one row. */
interface Subject {
  label: string;
  /** One uncontended cycle; worker `w` works on its own name. */
  op: Op;
  /** Every worker on one name (for the contended note); only for lock rows. */
  contended?: Op;
  failed?: string;
  latencies: number[];
  rate1: number[];
  rate32: number[];
  /** CPU µs per op at c=32, per round: this process, and the server (when it is our child). */
  nodeCpu32: number[];
  serverCpu32: number[];
  requestsPerOp: number;
}

function subject(label: string, op: Op, contended?: Op): Subject {
  return {
    label,
    op,
    ...(contended ? { contended } : {}),
    latencies: [],
    rate1: [],
    rate32: [],
    nodeCpu32: [],
    serverCpu32: [],
    requestsPerOp: Number.NaN,
  };
}

const WORKER_NAMES = Array.from({ length: CONCURRENCY }, (_, w) => `bench-w${w}`);
const CONTENDED_NAME = 'bench-contended';

function oncelyCycle(store: Store, name: (w: number) => string): Op {
  return async (w) => {
    const lock = await store.tryLock({ name: name(w), lockAtMostFor: '30s' });
    if (!lock) return false;
    if (!(await lock.release())) throw new Error('lock.release() returned false for a lock just taken');
    return true;
  };
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

async function makeFloor(backend: BackendName, url: string, poolSize: number): Promise<Floor> {
  switch (backend) {
    case 'memory':
      return memoryFloor();
    case 'sqlite':
      return sqliteFloor({
        file: url.slice('sqlite:'.length),
        // the PRAGMAs SqliteStore sets on a file it opens
        pragmas: ['busy_timeout = 10000', 'journal_mode = WAL', 'synchronous = NORMAL'],
      });
    case 'postgres':
      return postgresFloor(url, poolSize);
    case 'mysql':
      return mysqlFloor(url, poolSize);
    case 'redis':
      return redisFloor(url);
  }
}

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
  const closers: (() => Promise<unknown>)[] = [];
  const subjects: Subject[] = [];
  const missing: RowResult[] = [];
  let counter: RequestCounter | undefined;
  let poolNote = '';
  let poolSize = POOL_SIZE;
  let oncelyOpened = false;
  try {
    // oncely first: its pool size decides the floors' pool size.
    try {
      const oncely = await openOncely(backend, srv.url, prefix, POOL_SIZE);
      closers.push(() => oncely.close());
      oncelyOpened = true;
      poolSize = oncely.poolSize ?? POOL_SIZE;
      poolNote = oncely.poolNote;
      subjects.push(
        subject(
          LABEL.oncely,
          oncelyCycle(oncely.store, (w) => WORKER_NAMES[w]!),
          oncelyCycle(oncely.store, () => CONTENDED_NAME),
        ),
      );
    } catch (err) {
      missing.push(unavailableRow(LABEL.oncely, `unavailable: ${reason(err)}`));
    }
    let floor: Floor | undefined;
    try {
      floor = await makeFloor(backend, srv.url, poolSize);
      const f = floor;
      closers.push(() => f.close());
      subjects.push(
        subject(
          LABEL.floorLock,
          (w) => f.lock(WORKER_NAMES[w]!),
          () => f.lock(CONTENDED_NAME),
        ),
      );
      const roundTrip = f.roundTrip;
      if (roundTrip) {
        subjects.push(
          subject(LABEL.roundTrip, async () => {
            await roundTrip();
            return true;
          }),
        );
      } else {
        missing.push(unavailableRow(LABEL.roundTrip, 'n/a: in-process, no driver'));
      }
    } catch (err) {
      missing.push(
        unavailableRow(LABEL.floorLock, `unavailable: ${reason(err)}`),
        unavailableRow(LABEL.roundTrip, `unavailable: ${reason(err)}`),
      );
    }
    if (backend === 'redis') {
      try {
        const redlock = await redlockCompetitor(srv.url);
        closers.push(() => redlock.close());
        subjects.push(subject(LABEL.redlock, (w) => redlock.lock(WORKER_NAMES[w]!)));
      } catch (err) {
        missing.push(unavailableRow(LABEL.redlock, `unavailable: ${reason(err)}`));
      }
    }
    result.server =
      backend === 'memory'
        ? `MemoryStore, in-process (Node ${process.version})`
        : `${floor?.version ?? backend} via ${driverVersion(DRIVER[backend])}` +
          (backend === 'redis' ? ` and ${driverVersion('@sesamecare-oss/redlock')}` : '');
    result.setup = [srv.origin, connectionsText(backend, poolSize, poolNote)]
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
        await warmUp(s.op, CONCURRENCY, plan.warmUpOps * 4);
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
      const order = round % 2 === 0 ? live() : live().reverse();
      for (const concurrency of [1, CONCURRENCY]) {
        for (const s of order) {
          await guard(s, async () => {
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

    // Rows and ratios.
    const floorSubject = subjects.find((s) => s.label === LABEL.floorLock && s.failed === undefined);
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
        ratio1: floorSubject ? pairedRatio(floorSubject.rate1, s.rate1) : Number.NaN,
        ratio32: floorSubject ? pairedRatio(floorSubject.rate32, s.rate32) : Number.NaN,
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
    if (oncelyOpened) {
      await dropPrefixed(backend, srv.url, prefix).catch((err) => {
        result.notes.push(`could not drop oncely's ${prefix}* objects: ${reason(err)}`);
      });
    }
  }
  return result;
}
