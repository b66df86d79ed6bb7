/**
 * `oncely` usage and configuration errors: exit 2 with one message naming the problem, before
 * anything starts (the store file is never even created); runtime failures exit 1; passwords in
 * store URLs are never printed. Runs the built CLI (`npm run build` first).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, requireBuiltCli, runCli } from './fixtures/cli/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-config-'));
const db = join(dir, 'never.db');
const store = `sqlite:${db}`;
beforeAll(() => requireBuiltCli());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const GOOD_JOB = '  - name: ok\n    every: 1m\n    command: "true"\n';

interface Case {
  title: string;
  file: string;
  name?: string;
  message: RegExp | string;
}

/** One case per kind of bad jobs file; each message names the file, the job and the field. */
const CASES: Case[] = [
  {
    title: 'an unknown job field',
    file: 'jobs:\n  - name: a\n    every: 1s\n    comand: echo hi\n',
    message:
      'jobs.yaml: job 1 ("a"): unknown field "comand" (did you mean "command"?); allowed: name, cron, every',
  },
  {
    title: 'two triggers',
    file: 'jobs:\n  - name: a\n    cron: "0 * * * *"\n    every: 1s\n    command: "true"\n',
    message: 'jobs.yaml: job 1 ("a"): give only one of cron, every or at; got cron and every',
  },
  {
    title: 'a bad cron pattern',
    file: `jobs:\n${GOOD_JOB}  - name: b\n    cron: "61 * * * *"\n    command: "true"\n`,
    message: /^error: jobs\.yaml: job 2 \("b"\): field "cron": "61 \* \* \* \*" is invalid/m,
  },
  {
    title: 'a bad time zone',
    file: 'jobs:\n  - name: a\n    cron: "0 9 * * *"\n    timezone: Mars/Olympus\n    command: "true"\n',
    message: 'jobs.yaml: job 1 ("a"): field "timezone": "Mars/Olympus" is not a known IANA time zone',
  },
  {
    title: 'a bad duration',
    file: 'jobs:\n  - name: a\n    every: 1s\n    timeout: soon\n    command: "true"\n',
    message: 'jobs.yaml: job 1 ("a"): field "timeout": "soon" is not a duration',
  },
  {
    title: 'a bad overlap policy',
    file: `jobs:\n${GOOD_JOB}  - name: backup\n    cron: "0 3 * * *"\n    overlap: sometimes\n    command: ./backup.sh\n`,
    message: `jobs.yaml: job 2 ("backup"): field "overlap" must be one of 'skip', 'queue', 'queue-all', 'replace', 'allow'; got "sometimes"`,
  },
  {
    title: 'lockAtLeastFor above lockAtMostFor',
    file: 'jobs:\n  - name: a\n    every: 1s\n    lockAtMostFor: 5s\n    lockAtLeastFor: 1m\n    command: "true"\n',
    message: 'jobs.yaml: job 1 ("a"): field "lockAtLeastFor" (60000 ms) must not exceed lockAtMostFor',
  },
  {
    title: 'a missing command',
    file: 'jobs:\n  - name: a\n    every: 1s\n',
    message: 'jobs.yaml: job 1 ("a"): field "command" is required',
  },
  {
    title: 'an empty command',
    file: 'jobs:\n  - name: a\n    every: 1s\n    command: "  "\n',
    message: 'jobs.yaml: job 1 ("a"): field "command" must be a non-empty string',
  },
  {
    title: 'env that is not a mapping',
    file: 'jobs:\n  - name: a\n    every: 1s\n    command: "true"\n    env: [A=1]\n',
    message: 'jobs.yaml: job 1 ("a"): field "env" must be a mapping',
  },
  {
    title: 'an env value that is not a string',
    file: 'jobs:\n  - name: a\n    every: 1s\n    command: "true"\n    env:\n      PORT: 8080\n',
    message: 'jobs.yaml: job 1 ("a"): field "env": PORT must be a string (quote it in YAML); got number 8080',
  },
  {
    title: 'a cwd that does not exist',
    file: 'jobs:\n  - name: a\n    every: 1s\n    command: "true"\n    cwd: ./no-such-dir\n',
    message: 'jobs.yaml: job 1 ("a"): field "cwd": "./no-such-dir" is not an existing directory',
  },
  {
    title: 'a duplicate name',
    file: `jobs:\n${GOOD_JOB}  - name: b\n    every: 1s\n    command: "true"\n${GOOD_JOB}`,
    message: 'jobs.yaml: job 3 ("ok"): field "name" duplicates job 1; job names must be unique',
  },
  {
    title: 'a missing name',
    file: 'jobs:\n  - every: 1s\n    command: "true"\n',
    message: 'jobs.yaml: job 1: field "name" is required',
  },
  {
    title: 'no jobs list',
    file: 'job:\n  - name: a\n    every: 1s\n    command: "true"\n',
    message: 'jobs.yaml: missing the top-level "jobs:" list',
  },
  {
    title: 'an empty jobs list',
    file: 'jobs: []\n',
    message: 'jobs.yaml: "jobs" is empty',
  },
  {
    title: 'a YAML syntax error (with its line)',
    file: 'jobs:\n  - name: a\n    cron: * * * * *\n    command: "true"\n',
    message: /^error: jobs\.yaml:3:\d+: YAML syntax error: .*quote values that start with '\*'/m,
  },
  {
    title: 'a JSON syntax error (with its line)',
    name: 'jobs.json',
    file: '{\n  "jobs": [\n    { "name": "a", "every": "1s", "command": "true", }\n  ]\n}\n',
    message: /^error: jobs\.json:3:\d+: JSON syntax error/m,
  },
];

describe('oncely run: a bad jobs file exits 2 before anything starts', () => {
  for (const c of CASES) {
    it(`refuses ${c.title}`, async () => {
      const caseDir = mkdtempSync(join(dir, 'case-'));
      const name = c.name ?? 'jobs.yaml';
      writeFileSync(join(caseDir, name), c.file);
      const r = await runCli(['run', name, '--store', store], { cwd: caseDir });
      expect(r.code, r.stderr).toBe(2);
      if (typeof c.message === 'string') expect(r.stderr).toContain(`error: ${c.message}`);
      else expect(r.stderr).toMatch(c.message);
      expect(r.stdout).toBe('');
      // Validation comes before the store is opened: nothing was created, nothing started.
      expect(existsSync(db)).toBe(false);
    });
  }

  it('lists every problem of the file, one line each', async () => {
    const caseDir = mkdtempSync(join(dir, 'case-'));
    writeFileSync(
      join(caseDir, 'jobs.yaml'),
      'jobs:\n  - name: a\n    every: 1s\n    overlap: never\n  - name: b\n    every: soon\n    command: "true"\n',
    );
    const r = await runCli(['run', 'jobs.yaml', '--store', store], { cwd: caseDir });
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toContain('job 1 ("a"): field "command" is required');
    expect(lines[1]).toContain('job 1 ("a"): field "overlap" must be one of');
    expect(lines[2]).toContain('job 2 ("b"): field "every": "soon" is not a duration');
  });

  it('lists every problem in one run: several per job, and duplicates of jobs with other problems', async () => {
    const caseDir = mkdtempSync(join(dir, 'case-'));
    writeFileSync(
      join(caseDir, 'jobs.yaml'),
      [
        'jobs:',
        '  - name: a', // unknown field, no command, bad cron, bad duration, bad retries
        '    cron: "61 * * * *"',
        '    timeout: soon',
        '    retries: -1',
        '    colour: blue',
        '  - name: b',
        '    every: 1m',
        '    command: "true"',
        '  - name: b', // a duplicate that also has a bad overlap
        '    every: 1m',
        '    overlap: sometimes',
        '    command: "true"',
        '  - name: ""', // a bad name does not hide the job's other problems
        '    every: nope',
        '    lockAtMostFor: 5s',
        '    lockAtLeastFor: 1m',
        '    command: "true"',
        '',
      ].join('\n'),
    );
    const r = await runCli(['run', 'jobs.yaml', '--store', store], { cwd: caseDir });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    const expected = [
      'error: jobs.yaml: job 1 ("a"): unknown field "colour"',
      'error: jobs.yaml: job 1 ("a"): field "command" is required',
      'error: jobs.yaml: job 1 ("a"): field "cron": "61 * * * *" is invalid',
      'error: jobs.yaml: job 1 ("a"): field "timeout": "soon" is not a duration',
      'error: jobs.yaml: job 1 ("a"): field "retries" must be a whole number from 0 to 100; got -1',
      `error: jobs.yaml: job 3 ("b"): field "overlap" must be one of 'skip', 'queue', 'queue-all', 'replace', 'allow'; got "sometimes"`,
      'error: jobs.yaml: job 3 ("b"): field "name" duplicates job 2; job names must be unique',
      'error: jobs.yaml: job 4: field "name": job name must be a non-empty string',
      'error: jobs.yaml: job 4: field "every": "nope" is not a duration',
      'error: jobs.yaml: job 4: field "lockAtLeastFor" (60000 ms) must not exceed lockAtMostFor (5000 ms)',
    ];
    expect(lines, r.stderr).toHaveLength(expected.length);
    for (const [i, start] of expected.entries()) expect(lines[i], r.stderr).toContain(start);
    expect(existsSync(db)).toBe(false);
  });

  it('refuses a jobs file that does not exist', async () => {
    const r = await runCli(['run', join(dir, 'nope.yaml'), '--store', store]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('nope.yaml: cannot read the jobs file: no such file');
  });
});

describe('oncely: usage errors exit 2', () => {
  const jobs = join(dir, 'good.yaml');
  beforeAll(() => {
    writeFileSync(jobs, `jobs:\n${GOOD_JOB}`);
  });

  it.each([
    ['--concurrency 0', ['--concurrency', '0'], /--concurrency <n>.*must be a whole number from 1 to 10000/],
    ['--concurrency x', ['--concurrency', 'x'], /--concurrency <n>.*must be a whole number/],
    ['--grace soon', ['--grace', 'soon'], /--grace <duration>.*'30s'/],
    ['--dashboard host:', ['--dashboard', 'localhost:'], /--dashboard.*use PORT or HOST:PORT/],
    ['--node with a control character', ['--node', 'a\u0007b'], /node must be 1-200 printable characters/],
  ])('refuses a bad flag: %s', async (_title, flags, message) => {
    const r = await runCli(['run', jobs, '--store', store, ...flags]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it('refuses an unknown command and an unknown option', async () => {
    const a = await runCli(['frobnicate']);
    expect(a.code).toBe(2);
    expect(a.stderr).toContain("unknown command 'frobnicate'");
    const b = await runCli(['status', '--frob']);
    expect(b.code).toBe(2);
    expect(b.stderr).toContain("unknown option '--frob'");
    const c = await runCli(['history', '--limit', '0']);
    expect(c.code).toBe(2);
    expect(c.stderr).toContain('--limit');
    const d = await runCli([]);
    expect(d.code).toBe(2);
    expect(d.stderr).toContain('Usage: oncely');
  });

  it('refuses a malformed store URL and an unknown scheme without printing the password', async () => {
    for (const url of ['postgres://u:secret@db.example:notaport/app', 'postgres://u:secret@[::1/app']) {
      const r = await runCli(['status', '--store', url]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('malformed store URL "postgres://u:***@');
      expect(r.stderr + r.stdout).not.toContain('secret');
    }
    const r = await runCli(['nodes', '--store', 'nope://u:secret@somewhere/x']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('unknown store URL "nope://u:***@somewhere/x"');
    expect(r.stderr + r.stdout).not.toContain('secret');
  });

  it('refuses a non-loopback dashboard without ONCELY_DASHBOARD_TOKEN, before any job runs', async () => {
    const ledgerDir = mkdtempSync(join(dir, 'dash-'));
    const file = join(ledgerDir, 'jobs.yaml');
    writeFileSync(file, 'jobs:\n  - name: a\n    every: 1s\n    command: "echo ran >> ran.txt"\n');
    const r = await runCli(
      ['run', file, '--store', `sqlite:${join(ledgerDir, 'x.db')}`, '--dashboard', '0.0.0.0:0'],
      {
        cwd: ledgerDir,
      },
    );
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('ONCELY_DASHBOARD_TOKEN');
    expect(existsSync(join(ledgerDir, 'ran.txt'))).toBe(false);
  });
});

describe('oncely: runtime failures exit 1', () => {
  it('reports an unreachable store in one line, without the password', async () => {
    const url = 'postgres://u:secret@127.0.0.1:1/db';
    for (const args of [['status'], ['history', '--json'], ['trigger', 'x']]) {
      const r = await runCli([...args, '--store', url]);
      expect(r.code, r.stderr).toBe(1);
      // In the user's words: what could not be reached, and why — not "migrate failed".
      expect(r.stderr).toMatch(
        /^error: cannot connect to postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/db: connect ECONNREFUSED 127\.0\.0\.1:1$/m,
      );
      expect(r.stderr).not.toContain('migrate');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr + r.stdout).not.toContain('secret');
    }
  });

  it('checks the jobs file before the store, then reports the unreachable store with exit 1', async () => {
    const jobsDir = mkdtempSync(join(dir, 'unreachable-'));
    mkdirSync(join(jobsDir, 'scripts'));
    writeFileSync(join(jobsDir, 'jobs.yaml'), `jobs:\n${GOOD_JOB}    cwd: scripts\n`);
    const r = await runCli(['run', 'jobs.yaml', '--store', 'redis://:secret-pw@127.0.0.1:1'], {
      cwd: jobsDir,
    });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain('cannot connect to redis://:***@127.0.0.1:1: connect ECONNREFUSED');
    expect(r.stderr).not.toContain('secret');
  });
});

// Each case starts two CLI processes (~0.3 s each here); under a loaded CI machine one start took
// long enough for the 30 s default to fail a correct case, so these cases get a generous bound.
describe('oncely --version and --help', { timeout: 90_000 }, () => {
  it('prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = await runCli([flag]);
      expect(r.code).toBe(0);
      expect(r.stdout.trim()).toBe(version);
    }
  });

  it.each([
    'run',
    'status',
    'history',
    'locks',
    'nodes',
    'trigger',
    'pause',
    'resume',
    'dashboard',
    'demo',
  ])('has --help for %s', async (command) => {
    const r = await runCli([command, '--help']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Usage: oncely ${command}`);
    if (command !== 'demo') expect(r.stdout).toContain('--store <url>');
    const viaHelp = await runCli(['help', command]);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toBe(r.stdout);
  });
});
