/**
 * `once()` under real cron libraries: three replica processes schedule `* * * * * *` with croner
 * (on PostgreSQL) or node-cron (on a SQLite file) and wrap the callback in `once()`. One replica
 * is late — its clock reads 1.5 s behind (croner), or its callback hands the tick over 1.5 s late
 * (node-cron) — so each of its ticks comes after the fire time was run and released. Every fire time
 * must run exactly once across the processes, and the late replica must not run any of them again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { spawnTsx, type TsxChild } from './harness/child.js';
import { expectHistoryHolds } from './harness/history.js';

const script = fileURLToPath(new URL('./fixtures/once-node.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'oncely-once-mp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const postgres = serverBackend('postgres');
const RUN_MS = 4_500;

interface Line {
  event: 'ready' | 'run' | 'tick';
  fireTime?: number;
  token?: number;
  status?: string;
  reason?: string;
}

async function replicas(url: string, prefix: string, lib: string, lateMode: string) {
  const modes = ['on-time', 'on-time', lateMode];
  const children: TsxChild[] = [];
  let ready = 0;
  let allReady!: () => void;
  const readyPromise = new Promise<void>((resolve) => {
    allReady = resolve;
  });
  for (const mode of modes) {
    children.push(
      spawnTsx(script, [url, prefix, lib, mode, String(RUN_MS)], (line) => {
        if (line.includes('"ready"') && ++ready === modes.length) allReady();
      }),
    );
  }
  await Promise.race([
    readyPromise,
    Promise.all(children.map((c) => c.exited)).then(() => {
      throw new Error(`a replica exited early:\n${children.map((c) => c.stderr()).join('\n')}`);
    }),
  ]);
  for (const child of children) child.process.stdin!.write('go\n');
  const codes = await Promise.all(children.map((c) => c.exited));
  expect(codes, children.map((c) => c.stderr()).join('\n')).toEqual([0, 0, 0]);
  return children.map((c) => c.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Line));
}

function check(outputs: Line[][]) {
  const runs = outputs.flatMap((lines, replica) =>
    lines.filter((l) => l.event === 'run').map((l) => ({ ...l, replica })),
  );
  const ticks = outputs.map((lines) => lines.filter((l) => l.event === 'tick'));
  const [onTimeA, onTimeB, late] = ticks as [Line[], Line[], Line[]];

  // At most once per fire time, across all replicas.
  const runsOf = new Map<number, number[]>();
  for (const r of runs) runsOf.set(r.fireTime!, [...(runsOf.get(r.fireTime!) ?? []), r.replica]);
  const repeated = [...runsOf].filter(([, by]) => by.length > 1);
  expect(repeated, 'fire times run more than once').toEqual([]);

  // Exactly once for every fire time an on-time replica ticked for, and over the whole window.
  const onTimeFireTimes = new Set([...onTimeA, ...onTimeB].map((t) => t.fireTime!));
  expect(onTimeFireTimes.size).toBeGreaterThanOrEqual(3);
  for (const f of onTimeFireTimes)
    expect(runsOf.get(f), `runs of ${new Date(f).toISOString()}`).toHaveLength(1);
  for (const t of [...onTimeA, ...onTimeB]) {
    expect(
      t.status === 'succeeded' || (t.status === 'skipped' && t.reason === 'taken'),
      JSON.stringify(t),
    ).toBe(true);
  }

  // The late replica did tick for those fire times — each 1.5 s after it ran elsewhere and its claim
  // was released — and found every one of them still taken.
  const lateOnShared = late.filter((t) => onTimeFireTimes.has(t.fireTime!));
  expect(lateOnShared.length).toBeGreaterThanOrEqual(2);
  for (const t of lateOnShared)
    expect({ status: t.status, reason: t.reason }).toEqual({ status: 'skipped', reason: 'taken' });
  const lateRuns = runs.filter((r) => r.replica === 2 && onTimeFireTimes.has(r.fireTime!));
  expect(lateRuns).toEqual([]);
  // Fire times are whole seconds; every run got its own fencing token.
  for (const r of runs) expect(r.fireTime! % 1000).toBe(0);
  expect(new Set(runs.map((r) => r.token)).size).toBe(runs.length);
  // The history checker: once() has no attempts or recoveries, so any second start of a fire
  // time is a duplicate, and every fire time an on-time replica ticked for must have started.
  const checked = expectHistoryHolds({
    records: runs.map((r) => ({
      node: `replica-${r.replica}`,
      job: 'every-second',
      fireTime: r.fireTime!,
      attempt: 1,
      token: r.token!,
      source: 'schedule' as const,
      event: 'start' as const,
      at: r.fireTime!,
    })),
    jobs: [{ job: 'every-second', leaseMs: 30_000 }],
    expected: [...onTimeFireTimes].map((fireTime) => ({ job: 'every-second', fireTime })),
  });
  expect(checked.occurrences).toBe(runsOf.size);
}

describe.concurrent('once() with three replicas ticking every second', () => {
  it.skipIf(postgres.skip !== undefined)(
    'croner on PostgreSQL, one replica with its clock 1.5 s behind: each fire time runs once',
    async () => {
      const prefix = testPrefix('once_croner');
      const store = await openStore(postgres.url!, { prefix });
      await store.close();
      check(await replicas(postgres.url!, prefix, 'croner', 'clock-behind'));
    },
    40_000,
  );

  it('node-cron on a SQLite file, one replica handing its ticks over 1.5 s late: each fire time runs once', async () => {
    const url = `sqlite:${join(dir, 'node-cron.db')}`;
    const store = await openStore(url);
    await store.close();
    check(await replicas(url, 'oncely_', 'node-cron', 'late-callback'));
  }, 40_000);
});
