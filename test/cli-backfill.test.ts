/**
 * `oncely backfill <job> --from ISO --to ISO [--schedule ID] [--json]` (issue 32 item 4): the built
 * CLI (`npm run build` first) against a SQLite file a node in this process runs the job from; the
 * CLI defines nothing, it reads the job record. What it queues runs on the node, source
 * `backfill`, once each; asked again it queues nothing. Exit codes as docs/cli.md says: 0, and 2
 * for a missing or bad instant, a range reaching past now, an unknown job or schedule.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduler, openStore, type Scheduler, type Store } from '../src/index.js';
import { requireBuiltCli, runCli } from './fixtures/cli/cli.js';
import { until } from './harness/scheduler-suite.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-backfill-'));
const url = `sqlite:${join(dir, 'backfill.db')}`;

let store: Store;
let scheduler: Scheduler;
const ran: { fireTime: number; scheduleId?: string | undefined }[] = [];

beforeAll(async () => {
  requireBuiltCli();
  store = await openStore(url);
  scheduler = createScheduler({ store, node: 'node-b', pollInterval: '200ms', logger: false });
  // Hourly: nothing of it ran in the hours the tests backfill (the node just started).
  scheduler.define(
    'hourly',
    { cron: '0 * * * *' },
    (ctx) => void ran.push({ fireTime: ctx.fireTime.getTime() }),
  );
  scheduler.define(
    'reports',
    {},
    (ctx) => void ran.push({ fireTime: ctx.fireTime.getTime(), scheduleId: ctx.scheduleId }),
  );
  await scheduler.start();
  await scheduler.schedules.upsert({ id: 'r:7', job: 'reports', cron: '30 * * * *' });
}, 60_000);

afterAll(async () => {
  await scheduler?.stop();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const HOUR = 3_600_000;

describe('oncely backfill', () => {
  it('queues the hours of the range, which the node runs once each, source backfill; again: nothing', async () => {
    const top = Math.floor((await store.now()) / HOUR) * HOUR;
    const from = new Date(top - 5 * HOUR).toISOString();
    const to = new Date(top - 2 * HOUR).toISOString();
    const out = await runCli(['backfill', 'hourly', '--from', from, '--to', to, '--store', url, '--json']);
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({ job: 'hourly', from, to, queued: 3 });
    await until(
      () => ran.filter((r) => r.scheduleId === undefined).length >= 3,
      20_000,
      'three backfill runs',
    );
    expect(ran.map((r) => r.fireTime)).toEqual([top - 5 * HOUR, top - 4 * HOUR, top - 3 * HOUR]);
    // The third handler has started; its outcome is stored a moment later.
    let history = await scheduler.history({ job: 'hourly' });
    const deadline = performance.now() + 10_000;
    while (history.some((h) => h.status === 'running') && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      history = await scheduler.history({ job: 'hourly' });
    }
    expect(history.map((h) => [h.source, h.status])).toEqual([
      ['backfill', 'succeeded'],
      ['backfill', 'succeeded'],
      ['backfill', 'succeeded'],
    ]);
    const again = await runCli(['backfill', 'hourly', '--from', from, '--to', to, '--store', url]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('nothing to backfill');
  });

  it('--schedule: one stored schedule, text output', async () => {
    const top = Math.floor((await store.now()) / HOUR) * HOUR;
    const from = new Date(top - 3 * HOUR).toISOString();
    const out = await runCli([
      'backfill',
      'reports',
      '--schedule',
      'r:7',
      '--from',
      from,
      '--to',
      new Date(top - HOUR).toISOString(),
      '--store',
      url,
    ]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain('queued 2 backfill runs of "reports" (schedule "r:7")');
    await until(() => ran.filter((r) => r.scheduleId === 'r:7').length >= 2, 20_000, 'two runs of r:7');
    expect(ran.filter((r) => r.scheduleId === 'r:7').map((r) => r.fireTime)).toEqual([
      top - 3 * HOUR + HOUR / 2,
      top - 2 * HOUR + HOUR / 2,
    ]);
  });

  it('bad input exits 2 saying what to fix', async () => {
    const now = new Date(await store.now());
    const past = new Date(now.getTime() - 2 * HOUR).toISOString();
    const cases: [string[], RegExp][] = [
      [['backfill', 'hourly', '--to', past], /--from/],
      [['backfill', 'hourly', '--from', 'yesterday', '--to', past], /ISO-8601/],
      [
        ['backfill', 'hourly', '--from', past, '--to', new Date(now.getTime() + HOUR).toISOString()],
        /have passed/,
      ],
      [['backfill', 'nope', '--from', past, '--to', now.toISOString()], /no job named "nope"/],
      [
        ['backfill', 'reports', '--schedule', 'r:8', '--from', past, '--to', now.toISOString()],
        /no stored schedule "r:8"/,
      ],
    ];
    for (const [args, message] of cases) {
      const out = await runCli([...args, '--store', url]);
      expect(out.code, `${args.join(' ')}: ${out.stderr}`).toBe(2);
      expect(out.stderr).toMatch(message);
    }
  });
});
