/**
 * `oncely next <job> [--schedule ID] [--count N] [--json]` (issue 32 item 9): the built CLI
 * (`npm run build` first) against a SQLite file a node in this process writes; the CLI defines
 * nothing, it reads the job record (with its jitter). Its starts are next()'s; exit codes as
 * docs/cli.md says: 0, 2 for an unknown job or schedule, a schedule of another job or a bad count.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduler, openStore, type Scheduler, type Store } from '../src/index.js';
import { requireBuiltCli, runCli } from './fixtures/cli/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-next-'));
const url = `sqlite:${join(dir, 'next.db')}`;

let store: Store;
let scheduler: Scheduler;

beforeAll(async () => {
  requireBuiltCli();
  store = await openStore(url);
  scheduler = createScheduler({ store, node: 'node-n', pollInterval: '250ms', logger: false });
  scheduler.define('nightly', { cron: '0 2 * * *', jitter: '10m' }, async () => {});
  scheduler.define('reports', {}, async () => {});
  scheduler.define('held', { every: '1h' }, async () => {});
  await scheduler.start();
  await scheduler.schedules.upsert({ id: 'r:42', job: 'reports', cron: '0 9 * * *', jitter: '5m' });
  await scheduler.pause('held');
}, 60_000);

afterAll(async () => {
  await scheduler?.stop();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('oncely next', () => {
  it("--json prints next()'s starts: jitter applied, the job defined only by the node", async () => {
    const out = await runCli(['next', 'nightly', '--store', url, '--count', '3', '--json']);
    expect(out.code, out.stderr).toBe(0);
    const starts = JSON.parse(out.stdout) as string[];
    expect(starts).toEqual((await scheduler.next('nightly', { count: 3 })).map((d) => d.toISOString()));
    // 02:00 plus one stable offset within 10 minutes, every night.
    expect(new Set(starts.map((s) => s.slice(11)))).toHaveProperty('size', 1);
    expect(starts[0]).toMatch(/T02:0\d:\d\d\.\d{3}Z$/);
    expect(starts[0]).not.toMatch(/T02:00:00\.000Z$/);
  });

  it('text: a table of starts; --schedule: a stored schedule; paused: says so', async () => {
    const text = await runCli(['next', 'nightly', '--store', url]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^START +IN$/m);
    expect(text.stdout.trim().split('\n')).toHaveLength(6);

    const schedule = await runCli([
      'next',
      'reports',
      '--schedule',
      'r:42',
      '--store',
      url,
      '--json',
      '--count',
      '2',
    ]);
    expect(schedule.code, schedule.stderr).toBe(0);
    expect(JSON.parse(schedule.stdout)).toEqual(
      (await scheduler.schedules.next('r:42', { count: 2 })).map((d) => d.toISOString()),
    );

    const paused = await runCli(['next', 'held', '--store', url]);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toContain('paused');
    const pausedJson = await runCli(['next', 'held', '--store', url, '--json']);
    expect(JSON.parse(pausedJson.stdout)).toEqual([]);
  });

  it('an unknown job or schedule, a schedule of another job, a bad count: exit 2 saying what to fix', async () => {
    const unknown = await runCli(['next', 'nope', '--store', url]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no job named "nope"');
    expect(unknown.stderr).toContain('nightly');

    const noSchedule = await runCli(['next', 'reports', '--schedule', 'r:43', '--store', url]);
    expect(noSchedule.code).toBe(2);
    expect(noSchedule.stderr).toContain('"r:43"');

    const other = await runCli(['next', 'nightly', '--schedule', 'r:42', '--store', url]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('belongs to job "reports"');

    for (const count of ['0', '1001', 'x']) {
      const bad = await runCli(['next', 'nightly', '--count', count, '--store', url]);
      expect(bad.code, count).toBe(2);
      expect(bad.stderr).toContain('whole number from 1 to 1000');
    }
  });
});
