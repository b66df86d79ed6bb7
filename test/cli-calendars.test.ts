/**
 * `oncely calendars [list|get ID|upsert FILE|remove ID] [--json]` (issue 32 item 3): the built CLI
 * (`npm run build` first) against a SQLite file. Upsert from a JSON file (on the audit trail),
 * list and get as `scheduler.calendars` returns them, remove; a bad file or id exits 2 naming the
 * problem, an unknown id for `get` exits 2.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduler, openStore, type Scheduler, type Store } from '../src/index.js';
import { requireBuiltCli, runCli } from './fixtures/cli/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-calendars-'));
const url = `sqlite:${join(dir, 'cal.db')}`;

let store: Store;
let scheduler: Scheduler;

beforeAll(async () => {
  requireBuiltCli();
  store = await openStore(url);
  scheduler = createScheduler({ store, node: 'node-c', logger: false });
  scheduler.define('report', { cron: '0 9 * * *' }, async () => {});
  await scheduler.start();
}, 60_000);

afterAll(async () => {
  await scheduler?.stop();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('oncely calendars', () => {
  it('upsert FILE, list, get, remove — as scheduler.calendars sees them, on the audit trail', async () => {
    const file = join(dir, 'holidays.json');
    writeFileSync(
      file,
      JSON.stringify({ id: 'holidays-de', dates: ['2026-12-26', '2026-12-25'], timezone: 'Europe/Berlin' }),
    );
    const up = await runCli(['calendars', 'upsert', file, '--store', url]);
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toContain('stored calendar "holidays-de" (2 dates)');
    expect((await scheduler.calendars.get('holidays-de'))?.dates).toEqual(['2026-12-25', '2026-12-26']);
    const [entry] = await scheduler.audit({ limit: 1 });
    expect(entry?.action).toBe('calendars.upsert');

    const list = await runCli(['calendars', '--store', url]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^ID +TIME ZONE +DATES/m);
    expect(list.stdout).toMatch(/holidays-de +Europe\/Berlin +2 +2026-12-25 +2026-12-26/);
    const json = await runCli(['calendars', 'list', '--store', url, '--json']);
    expect(JSON.parse(json.stdout).map((c: { id: string }) => c.id)).toEqual(['holidays-de']);

    const got = await runCli(['calendars', 'get', 'holidays-de', '--store', url, '--json']);
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ id: 'holidays-de', dates: ['2026-12-25', '2026-12-26'] });
    const text = await runCli(['calendars', 'get', 'holidays-de', '--store', url]);
    expect(text.stdout).toContain('time zone: Europe/Berlin');
    expect(text.stdout).toContain('  2026-12-26');

    const removed = await runCli(['calendars', 'remove', 'holidays-de', '--store', url, '--json']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(JSON.parse(removed.stdout)).toEqual({ id: 'holidays-de', removed: true });
    expect(await scheduler.calendars.get('holidays-de')).toBeUndefined();
  });

  it('bad input exits 2 naming the problem', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ id: 'x', dates: ['2026-02-30'] }));
    const date = await runCli(['calendars', 'upsert', bad, '--store', url]);
    expect(date.code).toBe(2);
    expect(date.stderr).toMatch(/dates\[0\] must be a date written YYYY-MM-DD/);
    writeFileSync(bad, '{ id: ');
    const notJson = await runCli(['calendars', 'upsert', bad, '--store', url]);
    expect([notJson.code, notJson.stderr]).toEqual([2, expect.stringMatching(/is not JSON/)]);
    const missing = await runCli(['calendars', 'get', 'nope', '--store', url]);
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringMatching(/no calendar "nope"/)]);
    const noId = await runCli(['calendars', 'remove', '--store', url]);
    expect([noId.code, noId.stderr]).toEqual([2, expect.stringMatching(/needs a calendar id/)]);
    const verb = await runCli(['calendars', 'delete', 'x', '--store', url]);
    expect(verb.code).toBe(2);
  });
});
