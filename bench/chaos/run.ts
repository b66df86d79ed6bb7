/**
 * One chaos run on one backend: a throwaway server, N node processes (bench/chaos/node.ts), each
 * reaching the server through its own fault proxy, and a seeded schedule of faults, one at a time:
 * SIGKILL + restart, SIGSTOP past the lease + SIGCONT, proxy delay / lost replies / stall
 * (half-open) / reset on one node's link, and a restart of the store server. Afterwards the
 * history checker judges what the nodes and the store recorded. No clock skew: per-process skew
 * needs libfaketime, which this machine does not have.
 */
import { fileURLToPath } from 'node:url';
import { openStore } from '../../src/index.js';
import { createScheduler } from '../../src/scheduler/index.js';
import {
  type CheckResult,
  checkHistory,
  expectedOccurrences,
  type RunRecord,
  recordsFromHistory,
  type SkipRecord,
  skipsFromHistory,
} from '../../src/testing/index.js';
import { spawnTsx, type TsxChild } from '../../test/harness/child.js';
import { type FaultProxy, startFaultProxy } from '../../test/harness/fault-proxy.js';
import { runsFromLines } from '../../test/harness/history-lines.js';
import { type RunningServer, startPostgres, startRedis } from '../../test/harness/servers.js';
import { CHAOS_JOBS, STORED_IDS } from './jobs.js';
import { prng } from './prng.js';
import { openSink } from './sink.js';

export type ChaosBackend = 'postgres' | 'redis';

export interface ChaosOptions {
  backend: ChaosBackend;
  durationMs: number;
  nodes: number;
  seed: number;
  /** Each timeline line as it happens (default: nothing). */
  log?: (line: string) => void;
}

export interface ChaosReport {
  backend: ChaosBackend;
  seed: number;
  result: CheckResult;
  faults: Record<string, number>;
  timeline: string[];
}

const script = fileURLToPath(new URL('./node.ts', import.meta.url));
const PREFIX = 'chaos_';
const LEASE_MS = CHAOS_JOBS.tick.leaseMs;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Slot {
  index: number;
  gen: number;
  proxy: FaultProxy;
  child?: TsxChild;
  /** Set while the driver itself is ending this child (not a crash to restart). */
  ending: boolean;
}

export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const server: RunningServer =
    o.backend === 'postgres' ? await startPostgres() : await startRedis({ persist: true });
  const rand = prng(o.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const between = (lo: number, hi: number) => Math.round(lo + rand() * (hi - lo));
  const t0 = Date.now();
  const timeline: string[] = [];
  const faults: Record<string, number> = {};
  const note = (what: string) => {
    const line = `+${((Date.now() - t0) / 1000).toFixed(1)}s ${what}`;
    timeline.push(line);
    o.log?.(line);
  };
  const lines: unknown[] = [];
  let running = true;
  const slots: Slot[] = [];

  const launch = (slot: Slot) => {
    slot.gen += 1;
    slot.ending = false;
    const id = `n${slot.index}.${slot.gen}`;
    const child = spawnTsx(script, [slot.proxy.url, PREFIX, id], (line) => {
      if (line.startsWith('{')) lines.push({ ...(JSON.parse(line) as object), node: id });
    });
    slot.child = child;
    void child.exited.then((code) => {
      if (slot.child !== child || slot.ending || !running) return;
      // The node died by itself (e.g. openStore failed while the store was restarting): restart it.
      note(
        `${id} exited (${code ?? child.process.signalCode}) on its own: ${child.stderr().split('\n').filter(Boolean).at(-1) ?? ''}; restarting`,
      );
      setTimeout(() => running && launch(slot), 1000);
    });
  };
  const readyCount = () => lines.filter((l) => (l as { event?: string }).event === 'ready').length;

  try {
    // The stored schedules, once, before any node starts.
    const seeder = await openStore(server.url, { prefix: PREFIX });
    try {
      await createScheduler({ store: seeder, logger: false }).schedules.upsert(
        STORED_IDS.map((id) => ({ id, job: 'stored', every: CHAOS_JOBS.stored.every })),
      );
    } finally {
      await seeder.close();
    }
    for (let i = 0; i < o.nodes; i++)
      slots.push({ index: i, gen: 0, proxy: await startFaultProxy(server.url), ending: false });
    for (const slot of slots) launch(slot);
    const readyBy = Date.now() + 90_000;
    while (readyCount() < o.nodes) {
      if (Date.now() > readyBy)
        throw new Error(`chaos: nodes not ready: ${slots.map((s) => s.child?.stderr()).join('\n')}`);
      await sleep(100);
    }
    const tStart = Date.now();
    note(`${o.nodes} nodes ready on ${o.backend}; faults for ${o.durationMs / 1000} s, seed ${o.seed}`);
    const storeDown: { from: number; to: number }[] = [];
    const end = tStart + o.durationMs;
    const count = (kind: string) => {
      faults[kind] = (faults[kind] ?? 0) + 1;
    };

    while (Date.now() < end) {
      await sleep(between(1000, 3000));
      if (Date.now() >= end) break;
      const slot = pick(slots);
      const name = `n${slot.index}.${slot.gen}`;
      const kind = pick([
        'kill',
        'kill',
        'stop',
        'stop',
        'delay',
        'drop',
        'stall',
        'reset',
        'store-restart',
      ] as const);
      count(kind);
      if (kind === 'kill') {
        slot.ending = true;
        slot.child!.process.kill('SIGKILL');
        await slot.child!.exited;
        const down = between(500, 3000);
        note(`SIGKILL ${name}; restart in ${down} ms`);
        await sleep(down);
        launch(slot);
      } else if (kind === 'stop') {
        const ms = LEASE_MS + between(500, 3000);
        note(`SIGSTOP ${name} for ${ms} ms (lease ${LEASE_MS} ms)`);
        slot.child!.process.kill('SIGSTOP');
        await sleep(ms);
        slot.child!.process.kill('SIGCONT');
        note(`SIGCONT ${name}`);
      } else if (kind === 'delay') {
        const ms = between(50, 800);
        const hold = between(2000, 6000);
        note(`delay ${ms} ms on ${name}'s link for ${hold} ms`);
        slot.proxy.delay(ms);
        await sleep(hold);
        slot.proxy.delay(0);
      } else if (kind === 'drop') {
        const hold = between(1000, 5000);
        note(`drop replies on ${name}'s link for ${hold} ms, then reset it`);
        slot.proxy.dropReplies(true);
        await sleep(hold);
        slot.proxy.dropReplies(false);
        // A PostgreSQL client waits for a lost reply forever: the reset ends those waits.
        slot.proxy.resetAll();
      } else if (kind === 'stall') {
        const hold = between(1000, LEASE_MS + 2000);
        note(`stall (half-open) ${name}'s link for ${hold} ms`);
        slot.proxy.stall(true);
        await sleep(hold);
        slot.proxy.stall(false);
      } else if (kind === 'reset') {
        note(`reset ${name}'s connections`);
        slot.proxy.resetAll();
      } else {
        const from = Date.now();
        note('store server restart: stopping');
        await server.restart!();
        storeDown.push({ from, to: Date.now() + 2000 });
        note(`store server back after ${Date.now() - from} ms`);
      }
    }
    const tEnd = Date.now();
    note('faults over; waiting for recoveries');
    await sleep(LEASE_MS + 4000);
    running = false;
    for (const slot of slots) slot.ending = true;
    await Promise.all(
      slots.map(async (slot) => {
        const child = slot.child!;
        if (child.process.exitCode !== null || child.process.signalCode !== null) return;
        child.process.kill('SIGTERM');
        const timer = setTimeout(() => child.process.kill('SIGKILL'), 10_000);
        await child.exited;
        clearTimeout(timer);
      }),
    );
    note('nodes stopped; checking');

    const store = await openStore(server.url, { prefix: PREFIX });
    const sink = await openSink(server.url);
    const history: RunRecord[] = [];
    const storedSkips: SkipRecord[] = [];
    try {
      const s = createScheduler({ store });
      for (const job of Object.keys(CHAOS_JOBS)) {
        const entries = await s.history({ job, limit: 10_000 });
        history.push(...recordsFromHistory(entries));
        // Every skip on record, with its reason: the checker asks each one why (unjustified-skip).
        storedSkips.push(...skipsFromHistory(entries));
      }
    } finally {
      await store.close();
    }
    const writes = await sink.log();
    await sink.close();
    const { records, skips } = runsFromLines(lines);
    const healthy = complement({ from: tStart, to: tEnd }, storeDown);
    const result = checkHistory({
      records: [...records, ...history],
      skips: [...skips, ...storedSkips],
      jobs: Object.entries(CHAOS_JOBS).map(([job, j]) => ({ job, leaseMs: j.leaseMs })),
      expected: [
        ...expectedOccurrences('tick', { every: CHAOS_JOBS.tick.every }, { from: tStart, to: tEnd }),
        ...expectedOccurrences(
          'sharded',
          { every: CHAOS_JOBS.sharded.every },
          { from: tStart, to: tEnd, shards: CHAOS_JOBS.sharded.shards },
        ),
        ...STORED_IDS.flatMap((scheduleId) =>
          expectedOccurrences(
            'stored',
            { every: CHAOS_JOBS.stored.every },
            { from: tStart, to: tEnd, scheduleId },
          ),
        ),
      ],
      healthy,
      writes,
    });
    return { backend: o.backend, seed: o.seed, result, faults, timeline };
  } finally {
    running = false;
    for (const slot of slots) {
      slot.ending = true;
      const p = slot.child?.process;
      if (p && p.exitCode === null && p.signalCode === null) {
        p.kill('SIGCONT');
        p.kill('SIGKILL');
      }
    }
    await Promise.all(slots.map((s) => s.proxy.close()));
    await server.stop();
  }
}

/** `window` minus the `holes` (each a closed interval). */
function complement(window: { from: number; to: number }, holes: { from: number; to: number }[]) {
  const out: { from: number; to: number }[] = [];
  let from = window.from;
  for (const h of [...holes].sort((a, b) => a.from - b.from)) {
    if (h.from > from) out.push({ from, to: Math.min(h.from - 1, window.to) });
    from = Math.max(from, h.to + 1);
  }
  if (from <= window.to) out.push({ from, to: window.to });
  return out;
}
