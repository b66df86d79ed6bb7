/**
 * Jitter across processes (issue 32 items 1 and 9): three node processes on PostgreSQL run one
 * job with jitter per fire (its own trigger, every 2 s) and 30 stored schedules with jitter (per
 * schedule and per fire), for three fire times. Each fire time runs once; its start
 * (`scheduledAt`, reported by whichever process ran it) is the fire time plus the pure function's
 * offset (schedule/jitter.ts), never earlier on the store clock; and what each process's `next()`
 * predicted is what then started. So every process computes the same offsets.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';
import { openStore } from '../src/index.js';
import { compileJitter, type Jitter, jitterOffset } from '../src/schedule/jitter.js';
import { createScheduler } from '../src/scheduler/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { spawnTsx } from './harness/child.js';
import { until } from './harness/scheduler-suite.js';

const INTERVAL = 2000;
const JOB_JITTER: Jitter = { max: '1500ms', per: 'fire' };
/** The stored schedules' jitter: every third one per schedule, the others per fire. */
const scheduleJitter = (i: number): Jitter => (i % 3 === 0 ? '1500ms' : { max: '1500ms', per: 'fire' });

interface Line {
  event: 'next' | 'start' | 'misfired';
  node: string;
  starts?: number[];
  scheduleId?: string;
  fireTime?: number;
  scheduledAt?: number;
  storeNow?: number;
  firstFireTime?: number;
  action?: 'skipped' | 'run';
}

/** The pure function's start of `fireTime` (every 2 s: the next fire time is the cap). */
const expectedStart = (jitter: Jitter, job: string, scheduleId: string | undefined, fireTime: number) =>
  fireTime +
  jitterOffset(compileJitter(jitter, undefined, 'test'), job, scheduleId, fireTime, fireTime + INTERVAL);

describe('jitter: 3 node processes on PostgreSQL', () => {
  const postgres = serverBackend('postgres');
  const script = fileURLToPath(new URL('./fixtures/jitter-node.ts', import.meta.url));

  it.skipIf(postgres.skip !== undefined)(
    'each fire time runs once, at the same offset whichever process runs it, as next() said',
    async () => {
      const prefix = testPrefix('jitter3');
      const job = `jit-${randomId(5)}`;
      const procs = ['a', 'b', 'c'].map((id) => {
        const lines: Line[] = [];
        const child = spawnTsx(script, [postgres.url!, prefix, `${job}-${id}`, job], (line) => {
          if (line.startsWith('{')) lines.push(JSON.parse(line) as Line);
        });
        return { lines, child };
      });
      const store = await openStore(postgres.url!, { prefix });
      try {
        const all = () => procs.flatMap((p) => p.lines);
        await until(
          () => procs.every((p) => p.lines.some((l) => l.event === 'next')),
          30_000,
          '3 nodes started',
        );
        await createScheduler({ store, logger: false }).schedules.upsert(
          Array.from({ length: 30 }, (_, i) => ({
            id: `s${i}`,
            job,
            every: '2s',
            jitter: scheduleJitter(i),
          })),
        );
        // Three fire times of the stored schedules: the first three after the upsert returned (a
        // fire time during the upsert's own writes may come before the schedules exist: CI once
        // saw s0 miss the first fire time after a time read just before the upsert).
        const upsertedAt = await store.now();
        const first = Math.floor(upsertedAt / INTERVAL) * INTERVAL + INTERVAL;
        const fireTimes = [first, first + INTERVAL, first + 2 * INTERVAL];
        const last = fireTimes.at(-1)!;
        const starts = () => all().filter((l) => l.event === 'start');
        await until(
          () => starts().filter((l) => l.fireTime === last).length >= 31,
          last + INTERVAL + 8000 - Date.now(),
          `31 starts of ${new Date(last).toISOString()}`,
        );
        // A duplicate would come within a poll or two.
        await new Promise((r) => setTimeout(r, 600));
        const runs = starts().filter((l) => l.fireTime! <= last);

        // Once each: no (source, fire time) twice.
        const keys = runs.map((l) => `${l.scheduleId ?? ''}@${l.fireTime}`);
        expect(keys.length - new Set(keys).size, 'duplicate starts').toBe(0);
        // Every stored schedule and the job's own trigger at each of the three fire times.
        for (const f of fireTimes) {
          expect(
            runs.some((l) => l.scheduleId === undefined && l.fireTime === f),
            `job @${f}`,
          ).toBe(true);
          for (let i = 0; i < 30; i++)
            expect(
              runs.some((l) => l.scheduleId === `s${i}` && l.fireTime === f),
              `s${i} @${f}`,
            ).toBe(true);
        }
        // Each start is the pure function's, whichever process ran it, and none started early.
        for (const l of runs) {
          const jitter =
            l.scheduleId === undefined ? JOB_JITTER : scheduleJitter(Number(l.scheduleId.slice(1)));
          expect(l.scheduledAt, `${l.node} ${l.scheduleId ?? job}@${l.fireTime}`).toBe(
            expectedStart(jitter, job, l.scheduleId, l.fireTime!),
          );
          expect(l.storeNow!).toBeGreaterThanOrEqual(l.scheduledAt!);
        }
        const nodes = new Set(runs.map((l) => l.node));
        console.log(`jitter, 3 processes: ${runs.length} starts by ${nodes.size} processes`);
        expect(nodes.size).toBeGreaterThanOrEqual(2);
        // What each process's next() said before is what started: the job's own trigger.
        const ownStarts = new Set(runs.filter((l) => l.scheduleId === undefined).map((l) => l.scheduledAt));
        // Unless every process stalled past the misfire threshold (5 s) on a loaded host: a
        // predicted start then missed is on record as a misfire skip, not lost. (Each start is
        // before its fire time's successor, so its fire time is the interval it falls in.)
        const misfired = all().filter((l) => l.event === 'misfired' && l.scheduleId === undefined);
        const skippedByMisfire = (fireTime: number) =>
          misfired.some(
            (m) => m.action === 'skipped' && m.firstFireTime! <= fireTime && fireTime <= m.fireTime!,
          );
        for (const p of procs) {
          const predicted = p.lines.find((l) => l.event === 'next')!.starts!;
          expect(predicted).toHaveLength(4);
          for (const s of predicted.filter((s) => s <= last)) {
            const fireTime = Math.floor(s / INTERVAL) * INTERVAL;
            expect(
              ownStarts.has(s) || skippedByMisfire(fireTime),
              `predicted ${s} (fire time ${fireTime}); misfired: ${JSON.stringify(misfired)}; started: ${[...ownStarts].join(' ')}`,
            ).toBe(true);
          }
        }
      } finally {
        for (const p of procs) if (p.child.process.exitCode === null) p.child.process.kill('SIGKILL');
        await store.close();
      }
    },
    40_000,
  );
});
