/**
 * `oncely audit` (issue 32 item 8): the audit trail as a table and as `--json`, its filters and
 * cursor, and its exit codes (2 for a bad flag, before the store is opened). Runs the built CLI
 * (`npm run build` first) against a SQLite file a scheduler in this process writes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduler, openStore, type Store } from '../src/index.js';
import { requireBuiltCli, runCli } from './fixtures/cli/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-audit-'));
const url = `sqlite:${join(dir, 'audit.db')}`;
let store: Store;

beforeAll(async () => {
  requireBuiltCli();
  store = await openStore(url);
  const scheduler = createScheduler({ store, node: 'node-t', logger: false });
  await scheduler.schedules.upsert(
    { id: 'report:42', job: 'report', every: '1h', data: { user: 42 } },
    { actor: 'alice' },
  );
  await scheduler.schedules.upsert({ id: 'report:42', job: 'report', every: '2h', data: { user: 42 } });
  await scheduler.pause('report', { note: 'mail provider down', actor: '<script>bob</script>' });
}, 30_000);

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('oncely audit', () => {
  it('prints the trail newest first: who, what, and what changed', async () => {
    const r = await runCli(['audit', '--store', url]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^AT\s+ACTOR\s+ACTION\s+TARGET\s+CHANGE$/);
    expect(lines[1]).toMatch(/<script>bob<\/script>\s+pause\s+report\s+note: mail provider down/);
    expect(lines[2]).toMatch(/node-t\s+schedules\.upsert\s+report:42\s+every: "1h" → "2h"/);
    expect(lines[3]).toMatch(/alice\s+schedules\.upsert\s+report:42\s+new/);
  });

  it('--json: a bare array, filtered by --schedule, paged by --limit and --after', async () => {
    const all = await runCli(['audit', '--store', url, '--schedule', 'report:42', '--json']);
    expect(all.code).toBe(0);
    const entries = JSON.parse(all.stdout) as Array<{
      id: string;
      actor: string;
      action: string;
      before?: unknown;
    }>;
    expect(entries.map((e) => [e.action, e.actor])).toEqual([
      ['schedules.upsert', 'node-t'],
      ['schedules.upsert', 'alice'],
    ]);
    expect(entries[0]!.before).toMatchObject({ every: '1h' });
    const page1 = await runCli(['audit', '--store', url, '--job', 'report', '--limit', '1', '--json']);
    const [first] = JSON.parse(page1.stdout) as Array<{ id: string; action: string }>;
    expect(first!.action).toBe('pause');
    const page2 = await runCli([
      'audit',
      '--store',
      url,
      '--job',
      'report',
      '--limit',
      '5',
      '--after',
      first!.id,
      '--json',
    ]);
    expect((JSON.parse(page2.stdout) as unknown[]).length).toBe(2);
    const none = await runCli(['audit', '--store', url, '--job', 'nothing-here']);
    expect(none.code).toBe(0);
    expect(none.stdout.trim()).toBe('No changes recorded.');
  });

  it('exit 2 for a bad flag (limit out of range, a malformed cursor), naming it', async () => {
    const limit = await runCli(['audit', '--store', url, '--limit', '0']);
    expect(limit.code).toBe(2);
    expect(limit.stderr).toMatch(/--limit/);
    const after = await runCli(['audit', '--store', url, '--after', 'yesterday']);
    expect(after.code).toBe(2);
    expect(after.stderr).toMatch(/after must be the id of an audit entry/);
  });
});
