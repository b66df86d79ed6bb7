/**
 * The child-process side of the scale bench: what every system file (oncely-node.ts,
 * peers/*.ts) hands to {@link serveChild} — how to write schedules and how to run a node — and
 * the plumbing around it (IPC, batching of starts, round-trip counting, seeding in chunks
 * against a deadline). A system file is only ever run as a forked child.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { requestCounter } from '../counters.js';
import type { ChildConfig, FromChild, ToChild } from './protocol.js';
import { dueSchedule, otherSchedule, type UserSchedule } from './workload.js';

/** Writes schedules for one system. */
export interface Seeder {
  /** How it writes, for the report (e.g. `upsert([…]) in batches of 5,000`). */
  mode: string;
  /** Schedules per `upsert` call (default 5,000): the seeding deadline is checked between calls. */
  chunk?: number;
  /** Creates or replaces every schedule in `batch` (the same id again = a replacement). */
  upsert(batch: readonly UserSchedule[]): Promise<void>;
  close(): Promise<void>;
}

export interface NodeContext {
  config: ChildConfig;
  /** Call from the handler, first thing: the run of `scheduleId` for `fireTime` (when the system says) started now. */
  started(scheduleId: string, fireTime: number | null): void;
}

export interface NodeHandle {
  /** Settings worth reporting, e.g. `concurrency 1000`. */
  info?: string;
  /** oncely only: calls through the Store interface and records they returned. */
  storeCounts?(): { calls: number; rowsRead: number };
  stop(): Promise<void>;
}

export interface SystemImpl {
  /** Packages that bring a `pg` of their own (see ../counters.ts): their queries are round trips too. */
  pgFrom?: readonly string[];
  seeder(config: ChildConfig): Promise<Seeder>;
  node(ctx: NodeContext): Promise<NodeHandle>;
}

/** Schedules per seeding chunk, unless the seeder says: progress and the deadline are checked between chunks. */
const CHUNK = 5_000;
const FLUSH_MS = 100;

function send(message: FromChild): void {
  process.send?.(message);
}

/** Runs `fn` over `items` with at most `limit` calls in flight; rejects on the first failure. */
export async function inFlight<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Reports the error to the orchestrator, then exits 1. */
function fail(err: unknown): void {
  const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
  process.stderr.write(`${message}\n`);
  if (process.send)
    process.send({ t: 'error', message } satisfies FromChild, undefined, undefined, () => process.exit(1));
  else process.exit(1);
}

async function runSeeder(impl: SystemImpl, config: ChildConfig): Promise<void> {
  const seeder = await impl.seeder(config);
  const queue: ToChild[] = [];
  let wake: (() => void) | undefined;
  process.on('message', (m: ToChild) => {
    queue.push(m);
    wake?.();
  });
  send({ t: 'ready', info: seeder.mode });
  for (;;) {
    while (queue.length === 0) {
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
    const m = queue.shift()!;
    if (m.t === 'stop') {
      await seeder.close();
      process.send?.({ t: 'stopped' } satisfies FromChild, undefined, undefined, () => process.exit(0));
      return;
    }
    if (m.t !== 'seed') continue;
    const t0 = performance.now();
    let done = 0;
    const chunk = seeder.chunk ?? CHUNK;
    for (let from = m.from; from < m.from + m.count; from += chunk) {
      if (Date.now() >= config.seedDeadline) break;
      const end = Math.min(m.from + m.count, from + chunk);
      const batch: UserSchedule[] = [];
      for (let i = from; i < end; i++)
        batch.push(m.kind === 'due' ? dueSchedule(i, m.at) : otherSchedule(i, m.at));
      await seeder.upsert(batch);
      done += batch.length;
      send({ t: 'progress', done });
    }
    send({ t: 'seeded', done, ms: performance.now() - t0, mode: seeder.mode });
  }
}

async function runNode(impl: SystemImpl, config: ChildConfig): Promise<void> {
  // Patch the driver before any client exists, so every round trip is counted.
  const counter = await requestCounter(config.backend, impl.pgFrom);
  let rows: [string, number | null, number][] = [];
  const flush = () => {
    if (rows.length === 0) return;
    send({ t: 'starts', rows });
    rows = [];
  };
  const timer = setInterval(flush, FLUSH_MS);
  const allocations = await sampleAllocations();
  const handle = await impl.node({
    config,
    started(scheduleId, fireTime) {
      rows.push([scheduleId, fireTime, Date.now()]);
      if (rows.length >= 2_000) flush();
    },
  });
  process.on('message', (m: ToChild) => {
    if (m.t === 'sample') {
      flush();
      const usage = process.cpuUsage();
      const store = handle.storeCounts?.();
      void (counter?.read() ?? Promise.resolve(Number.NaN)).then((roundTrips) =>
        send({
          t: 'sample',
          seq: m.seq,
          roundTrips,
          ...(store && { storeCalls: store.calls, storeRowsRead: store.rowsRead }),
          cpuUs: usage.user + usage.system,
          rssBytes: process.memoryUsage.rss(),
          peakRssBytes: process.resourceUsage().maxRSS * 1024,
        }),
      );
    } else if (m.t === 'stop') {
      void handle
        .stop()
        .catch((err: unknown) => process.stderr.write(`stop: ${String(err)}\n`))
        .then(() => {
          clearInterval(timer);
          flush();
          return allocations?.();
        })
        .then(() => {
          process.send?.({ t: 'stopped' } satisfies FromChild, undefined, undefined, () => process.exit(0));
        });
    }
  });
  send({ t: 'ready', ...(handle.info !== undefined && { info: handle.info }) });
}

/** Entry point of a system file: waits for `init`, then seeds or runs a node until told to stop. */
export function serveChild(impl: SystemImpl): void {
  if (!process.send) {
    process.stderr.write(
      'this file is run by bench/scale/main.ts as a child process (npm run bench:scale)\n',
    );
    process.exit(2);
  }
  // The orchestrator went away: do not linger.
  process.on('disconnect', () => process.exit(0));
  process.on('unhandledRejection', fail);
  process.once('message', (m: ToChild) => {
    if (m.t !== 'init') return fail(new Error(`expected init, got ${m.t}`));
    const run = m.config.role === 'seed' ? runSeeder : runNode;
    run(impl, m.config).catch(fail);
  });
}

/**
 * SCALE_HEAP_PROF=<dir>: a node process samples what it allocates (every 32 KiB, objects the
 * garbage collector freed included: where the GC's work comes from) from its start to its stop,
 * and writes a `.heapprofile` there (Chrome DevTools reads it). Returns the writer, or undefined.
 * With SCALE_HEAP_PROF_SURVIVORS=1 only objects that survived the young generation are counted.
 */
async function sampleAllocations(): Promise<(() => Promise<void>) | undefined> {
  const dir = process.env['SCALE_HEAP_PROF'];
  if (!dir) return undefined;
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 32 * 1024,
    includeObjectsCollectedByMajorGC: true,
    // SCALE_HEAP_PROF_SURVIVORS=1: only what outlived the young generation (promoted, or still
    // live at the stop): where the scavenges' copying and the old generation's growth come from.
    includeObjectsCollectedByMinorGC: process.env['SCALE_HEAP_PROF_SURVIVORS'] !== '1',
  } as never);
  return async () => {
    const { profile } = await session.post('HeapProfiler.stopSampling');
    writeFileSync(join(dir, `alloc-${process.pid}.heapprofile`), JSON.stringify(profile));
    session.disconnect();
  };
}
