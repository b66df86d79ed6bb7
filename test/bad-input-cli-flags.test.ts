/**
 * Bad command lines, catalogued (docs/faults.md, "Bad input"): each exits 2 with an `error:` line
 * on stderr naming the flag or value and what is allowed, prints nothing on stdout, and — for a
 * bad flag or argument — never opens the store (the SQLite file is not created). Runs the built
 * CLI (`npm run build` first).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, type ExpectStatic, it } from 'vitest';
import { requireBuiltCli, runCli } from './fixtures/cli/cli.js';
import { serverBackend } from './harness/backends.js';

const redis = serverBackend('redis');
const dir = mkdtempSync(join(tmpdir(), 'oncely-bad-flags-'));
/** Stands for a SQLite file of each test's own (tests run at once; one opening the store must not fail another). */
const store = 'sqlite:{db}';
let files = 0;
const jobs = join(dir, 'jobs.yaml');
beforeAll(() => {
  requireBuiltCli();
  writeFileSync(jobs, 'jobs:\n  - name: ok\n    every: 1h\n    command: "true"\n');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * `oncely …args` exits 2, stderr matches every pattern, stdout is empty, the store was never
 * opened. Tests run concurrently (each is a process start), so `expect` is the test's own.
 */
async function usageError(
  expect: ExpectStatic,
  args: string[],
  patterns: RegExp[],
  env: Record<string, string> = {},
): Promise<string> {
  const db = join(dir, `never-${++files}.db`);
  const r = await runCli(
    args.map((a) => a.replace('{db}', db)),
    { env },
  );
  expect(r.code, r.stderr).toBe(2);
  for (const pattern of patterns) expect(r.stderr).toMatch(pattern);
  expect(r.stdout).toBe('');
  expect(existsSync(db), 'the store was opened').toBe(false);
  return r.stderr;
}

describe.concurrent('commands, flags and arguments', () => {
  it.for<[string, string[], RegExp[]]>([
    ['unknown command stauts', ['stauts'], [/error: unknown command 'stauts'/, /\(Did you mean status\?\)/]],
    [
      'unknown flag --jsn',
      ['status', '--jsn', '--store', store],
      [/error: unknown option '--jsn'/, /\(Did you mean --json\?\)/],
    ],
    ['--store without its value', ['status', '--store'], [/error: option '--store <url>' argument missing/]],
    ['run without the jobs file', ['run', '--store', store], [/error: missing required argument 'file'/]],
    [
      'trigger with two job names',
      ['trigger', 'a', 'b', '--store', store],
      [/error: too many arguments for 'trigger'\. Expected 1 argument but got 2/],
    ],
    [
      'history --limit abc',
      ['history', '--limit', 'abc', '--store', store],
      [/error: option '--limit <n>' argument 'abc' is invalid\. must be a whole number from 1 to 10000/],
    ],
    [
      'history --limit -5',
      ['history', '--limit', '-5', '--store', store],
      [/argument '-5' is invalid\. must be a whole number from 1 to 10000/],
    ],
    ['history --limit 1.5', ['history', '--limit', '1.5', '--store', store], [/argument '1\.5' is invalid/]],
    [
      'history --limit 10001',
      ['history', '--limit', '10001', '--store', store],
      [/argument '10001' is invalid\. must be a whole number from 1 to 10000/],
    ],
    [
      'locks --limit 0',
      ['locks', '--limit', '0', '--store', store],
      [/option '--limit <n>' argument '0' is invalid/],
    ],
    [
      'schedules --limit 1001',
      ['schedules', '--limit', '1001', '--store', store],
      [/argument '1001' is invalid\. must be a whole number from 1 to 1000/],
    ],
    [
      'schedules --after with a control character',
      ['schedules', '--after', 'a\u0001b', '--store', store],
      [/option '--after <id>' argument .* is invalid\. id must be 1-200 printable characters/],
    ],
    [
      "schedules --job ''",
      ['schedules', '--job', '', '--store', store],
      [/option '--job <name>' argument '' is invalid\. job name must be a non-empty string/],
    ],
    [
      'run --grace -5s',
      ['run', jobs, '--grace', '-5s', '--store', store],
      [
        /option '--grace <duration>' argument '-5s' is invalid\. use e\.g\. '500ms', '30s', '5m' or ISO-8601 'PT30S'/,
      ],
    ],
    [
      'run --grace "1 fortnight"',
      ['run', jobs, '--grace', '1 fortnight', '--store', store],
      [/argument '1 fortnight' is invalid\. use e\.g\. '500ms'/],
    ],
    [
      'run --concurrency 10001',
      ['run', jobs, '--concurrency', '10001', '--store', store],
      [/option '--concurrency <n>' argument '10001' is invalid\. must be a whole number from 1 to 10000/],
    ],
    [
      'run --dashboard 99999',
      ['run', jobs, '--dashboard', '99999', '--store', store],
      [/option '--dashboard <\[host:\]port>' argument '99999' is invalid\. use PORT or HOST:PORT/],
    ],
    [
      'dashboard --port 70000',
      ['dashboard', '--port', '70000', '--store', store],
      [/option '--port <port>' argument '70000' is invalid\. must be a whole number from 0 to 65535/],
    ],
    [
      "run --node ''",
      ['run', jobs, '--node', '', '--store', store],
      [/option '--node <name>' argument '' is invalid\. node must be 1-200 printable characters/],
    ],
    [
      "trigger ''",
      ['trigger', '', '--store', store],
      [/command-argument value '' is invalid for argument 'job'\. job name must be a non-empty string/],
    ],
    [
      'pause a name with a tab',
      ['pause', 'a\tb', '--store', store],
      [/job name "a\\tb" must not contain control characters/],
    ],
  ])('%s', async ([, args, patterns], { expect }) => {
    const stderr = await usageError(expect, args, patterns);
    // A name no job can have is not "unknown to this store": no warning comes before the error.
    expect(stderr).not.toContain('warning:');
  });

  it("dashboard --host '' (checked with the store open: exit 2)", async ({ expect }) => {
    const r = await runCli([
      'dashboard',
      '--host',
      '',
      '--port',
      '0',
      '--store',
      `sqlite:${join(dir, 'dash.db')}`,
    ]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/error: dashboard host must be a host name or IP address such as 127\.0\.0\.1/);
    expect(r.stdout).toBe('');
  });
});

describe.concurrent('store URLs and prefixes on the command line', () => {
  it.for<[string, string[], RegExp[]]>([
    [
      '--prefix my-app',
      ['status', '--store', store, '--prefix', 'my-app'],
      [/error: prefix "my-app" is invalid: use 1-31 letters, digits or '_'/],
    ],
    [
      "--store ''",
      ['status', '--store', ''],
      [/error: store URL must be a non-empty string such as sqlite:\.\/oncely\.db/],
    ],
    [
      '--store sqlite: in a directory that does not exist',
      ['status', '--store', `sqlite:${join(dir, 'no-such-dir', 'x.db')}`],
      [
        /error: sqlite store: the directory of ".*no-such-dir\/x\.db" .* does not exist; create it first or fix the path/,
      ],
    ],
    [
      '--store postgres://…?sslmod=require (misspelt sslmode)',
      ['status', '--store', 'postgres://u:secret@127.0.0.1:1/app?sslmod=require'],
      [
        /error: store URL "postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/app\?sslmod=require": unknown query parameter "sslmod" \(did you mean "sslmode"\?\)/,
      ],
    ],
  ])('%s', async ([, args, patterns], { expect }) => {
    const stderr = await usageError(expect, args, patterns);
    expect(stderr).not.toContain('secret');
  });

  it('ONCELY_STORE with an unknown scheme', async ({ expect }) => {
    await usageError(expect, ['status'], [/error: unknown store URL "nope:\/\/u:\*\*\*@h\/x"/], {
      ONCELY_STORE: 'nope://u:secret@h/x',
    });
  });

  it.skipIf(redis.skip)('--store redis://…/99 (a database the server does not have)', async ({ expect }) => {
    const url = new URL(redis.url!);
    url.pathname = '/99';
    await usageError(
      expect,
      ['status', '--store', url.toString()],
      [/error: redis store: database 99 of the store URL does not exist on this server/],
    );
  });
});
