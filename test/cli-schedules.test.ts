/**
 * `oncely schedules`: one page of stored schedules at a time (`--after` the last id for the next),
 * `schedules count`, the `--limit` maximum, the `--json` shape, and output through the same
 * scrubbing as every command. Runs the built CLI (`npm run build` first).
 */
import { execSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextPageCommand } from '../src/cli/commands/schedules.js';
import { createScheduler, openStore } from '../src/index.js';
import { CLI, requireBuiltCli, runCli } from './fixtures/cli/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-schedules-'));
const store = `sqlite:${join(dir, 'schedules.db')}`;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** An id a shell must not take literally. */
const ODD_ID = `zz it's "odd" |%`;

const oncely = (...args: string[]) => runCli(['schedules', ...args, '--store', store]);

beforeAll(async () => {
  requireBuiltCli();
  const s = await openStore(store);
  try {
    const scheduler = createScheduler({ store: s });
    await scheduler.schedules.upsert([
      ...Array.from({ length: 250 }, (_, i) => ({
        id: `user-${String(i).padStart(3, '0')}`,
        job: 'report',
        cron: '0 9 * * *',
        timezone: 'Europe/Berlin',
        data: { user: i },
      })),
      { id: ODD_ID, job: 'other', every: '1h' },
      { id: 'zz-past', job: 'other', at: '2020-01-01T00:00:00Z' },
    ]);
  } finally {
    await s.close();
  }
}, 30_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Row {
  id: string;
  job: string;
  trigger: Record<string, unknown>;
  timezone?: string;
  nextFireTime: string | null;
  data: unknown;
}

describe('oncely schedules', () => {
  it('pages through 250 schedules with --limit 100 and --after: each once, ascending by id', async () => {
    const seen: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < 5; page++) {
      const r = await oncely(
        '--job',
        'report',
        '--limit',
        '100',
        '--json',
        ...(after ? ['--after', after] : []),
      );
      expect(r.code, r.stderr).toBe(0);
      const rows = JSON.parse(r.stdout) as Row[];
      seen.push(...rows.map((row) => row.id));
      if (rows.length < 100) break;
      after = rows.at(-1)!.id;
    }
    expect(seen).toHaveLength(250);
    expect(new Set(seen).size).toBe(250);
    expect(seen).toEqual([...seen].sort());
  }, 30_000);

  it('--json is a bare array of { id, job, trigger, timezone?, nextFireTime, data }', async () => {
    const r = await oncely('--limit', '2', '--json');
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as Row[];
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      id: 'user-000',
      job: 'report',
      trigger: { cron: '0 9 * * *' },
      timezone: 'Europe/Berlin',
      data: { user: 0 },
    });
    expect(rows[0]!.nextFireTime).toMatch(ISO);
    // 09:00 in Berlin is 07:00 or 08:00 UTC.
    expect(rows[0]!.nextFireTime).toMatch(/T0[78]:00:00\.000Z$/);
    const other = JSON.parse((await oncely('--job', 'other', '--json')).stdout) as Row[];
    expect(other).toEqual([
      {
        id: ODD_ID,
        job: 'other',
        trigger: { every: '1h' },
        nextFireTime: expect.stringMatching(ISO),
        data: null,
      },
      {
        id: 'zz-past',
        job: 'other',
        trigger: { at: '2020-01-01T00:00:00.000Z' },
        nextFireTime: null,
        data: null,
      },
    ]);
  });

  it('shows an ended schedule as (ended), and --json its remainingRuns and ended (docs/bounds.md)', async () => {
    const url = `sqlite:${join(dir, 'bounded.db')}`;
    const s = await openStore(url);
    try {
      await createScheduler({ store: s }).schedules.upsert([
        { id: 'b-ended', job: 'bounded', every: '1h', endAt: '2020-01-01T00:00:00Z' },
        { id: 'b-left', job: 'bounded', every: '1h', maxRuns: 5 },
      ]);
    } finally {
      await s.close();
    }
    const json = await runCli(['schedules', '--json', '--store', url]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      expect.objectContaining({ id: 'b-ended', nextFireTime: null, ended: true }),
      expect.objectContaining({
        id: 'b-left',
        nextFireTime: expect.stringMatching(ISO),
        remainingRuns: 5,
        ended: false,
      }),
    ]);
    const text = await runCli(['schedules', '--store', url]);
    expect(text.stdout).toMatch(/^b-ended .*\(ended\)/m);
    expect(text.stdout).not.toMatch(/^b-left .*\(ended\)/m);
  });

  it('a full page ends with the command for the next one; the last page does not', async () => {
    const full = await oncely('--job', 'report', '--limit', '100', '--after', 'user-099');
    expect(full.code, full.stderr).toBe(0);
    const lines = full.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+JOB\s+TRIGGER\s+TIME ZONE\s+NEXT FIRE\s+DATA$/);
    expect(lines[1]).toMatch(
      /^user-100\s+report\s+cron 0 9 \* \* \*\s+Europe\/Berlin\s+\S+Z\s+\{"user":100\}$/,
    );
    expect(lines.at(-1)).toBe(
      `More may follow (the page is full). Next page: oncely schedules --store ${store} --job report --after user-199`,
    );
    const last = await oncely('--job', 'report', '--after', 'user-199');
    expect(last.stdout).not.toContain('Next page');
    expect(last.stdout.trimEnd().split('\n')).toHaveLength(1 + 50);
    // An id with quotes and spaces comes back shell-quoted.
    const odd = await oncely('--limit', '1', '--after', 'user-249');
    expect(odd.stdout.trimEnd().split('\n').at(-1)).toBe(
      `More may follow (the page is full). Next page: oncely schedules --store ${store} --limit 1 --after 'zz it'\\''s "odd" |%'`,
    );
  });

  it('the next-page hint repeats every flag given, so pasting it into a shell prints the next page', async () => {
    const first = await runCli([
      'schedules',
      '--store',
      store,
      '--prefix',
      'oncely_',
      '--job',
      'report',
      '--limit',
      '7',
    ]);
    expect(first.code, first.stderr).toBe(0);
    const hint = first.stdout.trimEnd().split('\n').at(-1)!;
    expect(hint).toBe(
      `More may follow (the page is full). Next page: oncely schedules --store ${store} --prefix oncely_ --job report --limit 7 --after user-006`,
    );
    const pasted = hint.replace(
      /^.*Next page: oncely /,
      `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} `,
    );
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ONCELY_')));
    const next = execSync(pasted, { encoding: 'utf8', env, shell: '/bin/sh' });
    expect(next.split('\n')[1]).toMatch(/^user-007\s+report/);
  });

  it('the hint shows a store URL with a password redacted, and says so', () => {
    const { command, redacted } = nextPageCommand(
      { store: 'postgres://app:s3cret-pw@db:5432/app?application_name=a b', prefix: 'team a_', limit: 100 },
      "it's",
    );
    expect(command).toBe(
      `oncely schedules --store 'postgres://app:***@db:5432/app?application_name=a%20b' --prefix 'team a_' --after 'it'\\''s'`,
    );
    expect(command).not.toContain('s3cret');
    expect(redacted).toBe(true);
    expect(nextPageCommand({ store: 'sqlite:./a.db', limit: 100 }, 'x').redacted).toBe(false);
  });

  it('count, of all or of one job; --json { count, job }', async () => {
    const all = await oncely('count');
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toBe('252\n');
    const one = await oncely('count', '--job', 'report', '--json');
    expect(JSON.parse(one.stdout)).toEqual({ count: 250, job: 'report' });
    expect((await oncely('count', '--job', 'nobody')).stdout).toBe('0\n');
  });

  it('usage errors exit 2 naming the problem: --limit above 1,000, count with --after, a bad subcommand', async () => {
    const big = await oncely('--limit', '5000');
    expect(big.code).toBe(2);
    expect(big.stderr).toContain(
      "'--limit <n>' argument '5000' is invalid. must be a whole number from 1 to 1000",
    );
    expect(big.stdout).toBe('');
    const count = await oncely('count', '--after', 'x');
    expect(count.code).toBe(2);
    expect(count.stderr).toContain('schedules count takes --job and --json only');
    expect((await oncely('counts')).code).toBe(2);
    expect((await oncely('--after', '')).code).toBe(2);
  });

  it('an unreachable store exits 1 without printing its password', async () => {
    const r = await runCli(['schedules', '--store', 'postgres://u:secret@127.0.0.1:1/db']);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain('postgres://u:***@127.0.0.1:1/db');
    expect(r.stderr).not.toContain('secret');
  });
});
