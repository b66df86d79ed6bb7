/**
 * `oncely dashboard` and `oncely run --dashboard`: the CLI starts the dashboard on the store,
 * prints or logs its URL, serves the JSON API, and stops cleanly (exit 0) on SIGTERM. The
 * dashboard's own behaviour is tested with its code; this is the command wiring. Runs the built
 * CLI (`npm run build` first).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltCli, runCli, startCli, until } from './fixtures/cli/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-dashboard-'));
beforeAll(() => requireBuiltCli());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('oncely dashboard', () => {
  it('serves the store on the printed URL until SIGTERM, then exits 0', async () => {
    const store = `sqlite:${join(dir, 'dash.db')}`;
    const node = startCli(['dashboard', '--store', store, '--port', '0']);
    try {
      await until(() => /http:\/\/127\.0\.0\.1:\d+/.test(node.stdout()), 30_000, 'the dashboard URL');
      const url = /http:\/\/127\.0\.0\.1:\d+/.exec(node.stdout())![0];
      const res = await fetch(`${url}/api/jobs`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual([]);
      node.process.kill('SIGTERM');
      expect(await node.exited).toEqual({ code: 0, signal: null });
    } finally {
      if (node.process.exitCode === null) node.process.kill('SIGKILL');
    }
  }, 60_000);

  it('refuses a token shorter than 16 characters on a public host: exit 2, naming the variable', async () => {
    const r = await runCli(
      ['dashboard', '--store', `sqlite:${join(dir, 'weak.db')}`, '--host', '0.0.0.0', '--port', '0'],
      { env: { ONCELY_DASHBOARD_TOKEN: 'short-secret' }, timeoutMs: 20_000 },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('ONCELY_DASHBOARD_TOKEN');
    expect(r.stderr).toContain('16');
    expect(r.stderr + r.stdout).not.toContain('short-secret');
  }, 60_000);

  it('runs next to the jobs with `oncely run --dashboard`', async () => {
    const jobs = join(dir, 'jobs.yaml');
    writeFileSync(jobs, 'jobs:\n  - name: hourly\n    cron: "0 * * * *"\n    command: "true"\n');
    const node = startCli([
      'run',
      jobs,
      '--store',
      `sqlite:${join(dir, 'run.db')}`,
      '--dashboard',
      '127.0.0.1:0',
    ]);
    try {
      await node.waitForLog(/ ready {4}node=\S+ .* dashboard=http:\/\/127\.0\.0\.1:\d+/, 60_000);
      const url = / dashboard=(http:\/\/127\.0\.0\.1:\d+)/.exec(node.stderr())![1]!;
      const res = await fetch(`${url}/api/jobs`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { name: string; trigger: unknown }[];
      expect(body.map((j) => [j.name, j.trigger])).toEqual([['hourly', { cron: '0 * * * *' }]]);
      node.process.kill('SIGTERM');
      expect(await node.exited).toEqual({ code: 0, signal: null });
    } finally {
      if (node.process.exitCode === null) node.process.kill('SIGKILL');
    }
  }, 60_000);
});
