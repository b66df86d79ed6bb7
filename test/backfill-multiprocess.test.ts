/**
 * Backfill across processes (issue 32 item 4): three node processes on PostgreSQL run one job
 * every second; it is paused for ~5 s (misfire 'skip': those fire times do not run), resumed,
 * and then all three processes are asked at once to backfill the range: the three `queued` add up
 * to the missing count, every fire time of the range runs exactly once (in all processes
 * together), the backfilled ones with source `backfill`, in fire-time order on the store clock.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';
import { openStore } from '../src/index.js';
import { createScheduler } from '../src/scheduler/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { spawnTsx } from './harness/child.js';
import { until } from './harness/scheduler-suite.js';

interface Line {
  event: 'ready' | 'start' | 'queued';
  node: string;
  fireTime?: number;
  source?: string;
  storeNow?: number;
  queued?: number;
}

const SECOND = 1000;

describe('backfill: 3 node processes on PostgreSQL', () => {
  const postgres = serverBackend('postgres');
  const script = fileURLToPath(new URL('./fixtures/backfill-node.ts', import.meta.url));

  it.skipIf(postgres.skip !== undefined)(
    'asked of all three at once: each missing fire time queued once and run once, in order',
    async () => {
      const prefix = testPrefix('backfill3');
      const job = `bf-${randomId(5)}`;
      const lines: Line[] = [];
      const procs = ['a', 'b', 'c'].map((id) =>
        spawnTsx(script, [postgres.url!, prefix, `${job}-${id}`, job], (line) => {
          if (line.startsWith('{')) lines.push(JSON.parse(line) as Line);
        }),
      );
      const store = await openStore(postgres.url!, { prefix });
      const control = createScheduler({ store, logger: false });
      try {
        const starts = () => lines.filter((l) => l.event === 'start');
        await until(() => lines.filter((l) => l.event === 'ready').length === 3, 30_000, '3 nodes started');
        await until(() => starts().length >= 2, 15_000, 'first runs');
        await control.pause(job);
        const pausedAt = await store.now();
        while ((await store.now()) < pausedAt + 5000) await new Promise((r) => setTimeout(r, 50));
        await control.resume(job);
        const resumedAt = await store.now();
        while ((await store.now()) < resumedAt + 5000) await new Promise((r) => setTimeout(r, 50));
        const now = await store.now();
        const from = Math.min(...starts().map((l) => l.fireTime!));
        const to = Math.floor((now - 2500) / SECOND) * SECOND;
        const ran = new Set(starts().map((l) => l.fireTime!));
        const missing: number[] = [];
        for (let t = from; t < to; t += SECOND) if (!ran.has(t)) missing.push(t);
        const timeline = () =>
          `paused ${new Date(pausedAt).toISOString()}, resumed ${new Date(resumedAt).toISOString()}; starts ${starts()
            .map(
              (l) => `${new Date(l.fireTime!).toISOString().slice(17, 23)}:${l.source}@${l.node.slice(-1)}`,
            )
            .join(' ')}`;
        expect(missing.length, timeline()).toBeGreaterThanOrEqual(2);

        for (const p of procs) p.process.stdin!.write(`${from} ${to}\n`);
        await until(
          () => lines.filter((l) => l.event === 'queued').length === 3,
          30_000,
          'three backfill() answers',
        );
        const queued = lines.filter((l) => l.event === 'queued').map((l) => l.queued!);
        expect(
          queued.reduce((a, b) => a + b, 0),
          `queued ${queued.join(' + ')}; ${timeline()}`,
        ).toBe(missing.length);
        const backfilled = () => starts().filter((l) => l.source === 'backfill');
        await until(() => backfilled().length >= missing.length, 30_000, `${missing.length} backfill runs`);
        // A duplicate would come within a poll or two.
        await new Promise((r) => setTimeout(r, 1500));

        const inRange = starts().filter((l) => l.fireTime! >= from && l.fireTime! < to);
        const counts = new Map<number, number>();
        for (const l of inRange) counts.set(l.fireTime!, (counts.get(l.fireTime!) ?? 0) + 1);
        for (let t = from; t < to; t += SECOND) expect(counts.get(t) ?? 0, `${t}: ${timeline()}`).toBe(1);
        const byStart = [...backfilled()].sort((x, y) => x.storeNow! - y.storeNow!);
        expect(
          byStart.map((l) => l.fireTime),
          timeline(),
        ).toEqual(missing);
        const nodes = new Set(backfilled().map((l) => l.node));
        console.log(`backfill, 3 processes: ${missing.length} backfilled by ${nodes.size} processes`);
      } finally {
        for (const p of procs) if (p.process.exitCode === null) p.process.kill('SIGKILL');
        await store.close();
      }
    },
    90_000,
  );
});
