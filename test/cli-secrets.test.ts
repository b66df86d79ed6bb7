/**
 * oncely's own secrets — the store URL's password and ONCELY_DASHBOARD_TOKEN — never reach a
 * command `oncely run` starts, nor its log, nor history (as stored, as `oncely history` prints it,
 * as the dashboard serves it), even when a command prints them itself (handed in through its own
 * `env:`), a write at a time; and terminal escapes a command prints reach neither the log nor
 * `oncely history`'s text. The password case runs on the harness's PostgreSQL, which checks it
 * (scram), with the URL from $ONCELY_STORE and from --store. Runs the built CLI (`npm run build`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduler } from '../src/scheduler/scheduler.js';
import type { HistoryEntry } from '../src/scheduler/types.js';
import { openStore } from '../src/store/open.js';
import { requireBuiltCli, runCli, startCli } from './fixtures/cli/cli.js';
import { serverBackend, testPrefix } from './harness/backends.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-secrets-'));
beforeAll(() => requireBuiltCli());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const postgres = serverBackend('postgres');
if (postgres.skip)
  console.warn(`\n!!! SKIPPING the oncely CLI secrets tests on PostgreSQL: ${postgres.skip}\n`);

/** Long enough for the dashboard (16+), and nothing else in the output looks like it. */
const TOKEN = 'dash-tok_7c1f0e93b5a2d648';

interface Target {
  /** The store URL, and the prefix inside it. */
  url: string;
  prefix: string;
  /** `$ONCELY_STORE` (true) or `--store`. */
  viaEnv: boolean;
}

/** Flags and environment of an `oncely` command on `target`; the token only where asked. */
function invocation(target: Target, env: Record<string, string> = {}) {
  return {
    args: [...(target.viaEnv ? [] : ['--store', target.url]), '--prefix', target.prefix],
    env: { ...(target.viaEnv && { ONCELY_STORE: target.url }), ...env },
  };
}

/** History as stored, read with the library (not through the CLI, which scrubs what it knows). */
async function storedHistory(target: Target, job: string): Promise<HistoryEntry[]> {
  const store = await openStore(target.url, { prefix: target.prefix });
  try {
    return await createScheduler({ store }).history({ job });
  } finally {
    await store.close();
  }
}

async function secretsScenario(target: Target, password: string | undefined): Promise<void> {
  const work = mkdtempSync(join(dir, 'case-'));
  const half = password === undefined ? 0 : Math.ceil(password.length / 2);
  const secretEnv = [
    '    env:',
    `      PW: ${JSON.stringify(password ?? '')}`,
    `      PW_HEAD: ${JSON.stringify(password?.slice(0, half) ?? '')}`,
    `      PW_TAIL: ${JSON.stringify(password?.slice(half) ?? '')}`,
    `      TOK: ${JSON.stringify(TOKEN)}`,
  ];
  writeFileSync(
    join(work, 'jobs.yaml'),
    [
      'jobs:',
      '  - name: env-leak',
      // `${VAR-unset}`: "unset" when VAR is not in the environment at all, "" when it is but empty.
      '    command: echo "store=$' +
        '{ONCELY_STORE-unset} token=$' +
        '{ONCELY_DASHBOARD_TOKEN-unset} debug=$' +
        '{ONCELY_DEBUG-unset}"',
      '  - name: prints-secrets',
      // The password in two writes 300 ms apart: two chunks of the pipe.
      `    command: printf %s "$PW_HEAD"; sleep 0.3; printf '%s\\n' "$PW_TAIL"; echo "pw=$PW"; echo "open http://127.0.0.1/?token=$TOK"`,
      ...secretEnv,
      '  - name: fails-with-secrets',
      '    command: echo "pw=$PW tok=$TOK" >&2; exit 3',
      ...secretEnv,
      '',
    ].join('\n'),
  );
  const run = invocation(target, { ONCELY_DASHBOARD_TOKEN: TOKEN, ONCELY_DEBUG: '' });
  const node = startCli(
    ['run', 'jobs.yaml', ...run.args, '--node', 'secrets-1', '--dashboard', '127.0.0.1:0'],
    {
      cwd: work,
      env: run.env,
    },
  );
  try {
    await node.waitForLog(/ ready {4}node=secrets-1 .* dashboard=http:\/\/127\.0\.0\.1:\d+/, 60_000);
    const dashboard = / dashboard=(http:\/\/127\.0\.0\.1:\d+)/.exec(node.stderr())![1]!;
    // Inspection commands without the token in their environment: they cannot scrub it.
    const cli = invocation(target);
    for (const job of ['env-leak', 'prints-secrets', 'fails-with-secrets']) {
      const r = await runCli(['trigger', job, ...cli.args], { env: cli.env });
      expect(r.code, r.stderr).toBe(0);
    }
    const runOf = async (job: string, status: string): Promise<HistoryEntry> => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const entry = (await storedHistory(target, job)).find((e) => e.status === status);
        if (entry) return entry;
        if (Date.now() > deadline) throw new Error(`no ${status} run of ${job}\n${node.stderr()}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    };

    // 1. The command's environment has none of oncely's settings.
    expect((await runOf('env-leak', 'succeeded')).output).toBe('store=unset token=unset debug=unset\n');

    // 2. What a command prints is redacted before it is stored: history as stored…
    const printed = await runOf('prints-secrets', 'succeeded');
    expect(printed.output).toBe(
      `${password === undefined ? '\n' : '***\n'}pw=${password === undefined ? '' : '***'}\n` +
        'open http://127.0.0.1/?token=***\n',
    );
    const failed = await runOf('fails-with-secrets', 'failed');
    expect(failed.error).toContain(`pw=${password === undefined ? '' : '***'} tok=***\n`);
    const secrets = password === undefined ? [TOKEN] : [TOKEN, password];
    // …as `oncely history --json` and the dashboard show it…
    const history = await runCli(['history', '--json', ...cli.args], { env: cli.env });
    expect(history.code, history.stderr).toBe(0);
    const api = await fetch(`${dashboard}/api/history`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(api.status).toBe(200);
    const served = await api.text();
    // A browser's first visit carries the token in the URL.
    expect((await fetch(`${dashboard}/?token=${TOKEN}`, { redirect: 'manual' })).status).toBe(303);
    for (const secret of secrets) {
      expect(history.stdout).not.toContain(secret);
      expect(served).not.toContain(secret);
    }
    expect(history.stdout).toContain('?token=***');

    node.process.kill('SIGTERM');
    expect(await node.exited, node.stderr()).toEqual({ code: 0, signal: null });
    // 3. …and the log of `oncely run` (which did know them) never shows them.
    const log = node.stderr();
    expect(log).toMatch(/ out job=prints-secrets fire=\S+ \| open http:\/\/127\.0\.0\.1\/\?token=\*\*\*$/m);
    if (password !== undefined) expect(log).toMatch(/ out job=prints-secrets fire=\S+ \| \*\*\*$/m);
    for (const secret of secrets) expect(log).not.toContain(secret);
  } finally {
    if (node.process.exitCode === null) node.process.kill('SIGKILL');
  }
}

describe('oncely run keeps its secrets', () => {
  it('from commands, history and the log (SQLite, dashboard token)', async () => {
    const url = `sqlite:${join(mkdtempSync(join(dir, 'sqlite-')), 'oncely.db')}`;
    await secretsScenario({ url, prefix: 'oncely_', viaEnv: true }, undefined);
  }, 120_000);

  it.skipIf(postgres.skip !== undefined)(
    'from commands, history and the log (PostgreSQL password from $ONCELY_STORE, dashboard token)',
    async () => {
      const password = decodeURIComponent(new URL(postgres.url!).password);
      expect(password.length).toBeGreaterThanOrEqual(4);
      await secretsScenario({ url: postgres.url!, prefix: testPrefix('secrets'), viaEnv: true }, password);
    },
    120_000,
  );

  it.skipIf(postgres.skip !== undefined)(
    'from commands, history and the log (PostgreSQL password from --store, dashboard token)',
    async () => {
      const password = decodeURIComponent(new URL(postgres.url!).password);
      await secretsScenario({ url: postgres.url!, prefix: testPrefix('secrets'), viaEnv: false }, password);
    },
    120_000,
  );

  it.skipIf(postgres.skip !== undefined)(
    'from commands, history and the log (PostgreSQL password as ?password= in --store)',
    async () => {
      // Before issue 29 only `user:password@` was a secret: this form was printed in the ready
      // line and stored unredacted in a command's output.
      const url = new URL(postgres.url!);
      const password = decodeURIComponent(url.password);
      url.password = '';
      url.searchParams.set('password', password);
      await secretsScenario({ url: url.toString(), prefix: testPrefix('secrets'), viaEnv: false }, password);
    },
    120_000,
  );
});

describe('oncely run and oncely history neutralise terminal escapes', () => {
  it('shows what a command prints as \\x1b text, and keeps it raw in history', async () => {
    const work = mkdtempSync(join(dir, 'escapes-'));
    writeFileSync(
      join(work, 'jobs.yaml'),
      "jobs:\n  - name: escapes\n    command: printf '\\033]0;pwned\\007\\033[2Jafter\\n'\n",
    );
    const store = ['--store', `sqlite:${join(work, 'oncely.db')}`];
    const node = startCli(['run', 'jobs.yaml', ...store, '--node', 'esc-1'], { cwd: work });
    try {
      await node.waitForLog(/ ready {4}node=esc-1 /, 60_000);
      expect((await runCli(['trigger', 'escapes', ...store])).code).toBe(0);
      await node.waitForLog(/ finished job=escapes .* status=succeeded /);
      const json = await runCli(['history', '--json', ...store]);
      expect(json.code, json.stderr).toBe(0);
      expect((JSON.parse(json.stdout) as { output?: string }[])[0]?.output).toBe(
        '\x1b]0;pwned\x07\x1b[2Jafter\n',
      );
      const text = await runCli(['history', ...store]);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain('after');
      node.process.kill('SIGTERM');
      await node.exited;
      const log = node.stderr();
      expect(log).toContain(' | \\x1b]0;pwned\\x07\\x1b[2Jafter\n');
      for (const out of [log, text.stdout, json.stdout]) {
        expect(out).not.toContain('\x1b');
        expect(out).not.toContain('\x07');
      }
    } finally {
      if (node.process.exitCode === null) node.process.kill('SIGKILL');
    }
  }, 90_000);
});

describe('secrets too short to search for are refused where they are configured', () => {
  it('the dashboard refuses ONCELY_DASHBOARD_TOKEN=short in words that stay readable', async () => {
    const r = await runCli(['dashboard', '--store', `sqlite:${join(dir, 'short-token.db')}`], {
      env: { ONCELY_DASHBOARD_TOKEN: 'short' },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('ONCELY_DASHBOARD_TOKEN is too short (5 characters)');
    expect(r.stderr).not.toContain('***');
  });

  it('oncely run refuses a store password shorter than 8 characters, without printing it', async () => {
    const work = mkdtempSync(join(dir, 'short-pw-'));
    writeFileSync(join(work, 'jobs.yaml'), 'jobs:\n  - name: j\n    every: 1m\n    command: "true"\n');
    const r = await runCli(['run', 'jobs.yaml', '--store', 'postgres://app:tiny@127.0.0.1:1/app'], {
      cwd: work,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /password in store URL "postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/app" has 4 characters: .* from 8 characters on/,
    );
    expect(r.stderr).not.toContain('tiny');
  });
});
