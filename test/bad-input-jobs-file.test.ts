/**
 * Bad jobs files for `oncely run`, catalogued (docs/faults.md, "Bad input"), beyond the ones in
 * test/cli-config.test.ts: each exits 2 before anything starts (the store file is never created),
 * naming the file — and where it applies the line, the job and the field. Also what shell
 * metacharacters do (they are the command's, never oncely's). Runs the built CLI.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltCli, runCli, startCli } from './fixtures/cli/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-bad-jobs-'));
beforeAll(() => requireBuiltCli());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const JOB = '  - name: a\n    every: 1h\n    command: "true"\n';

/** A YAML file whose aliases expand 9^6 times: a "billion laughs" jobs file. */
const ALIAS_BOMB = [
  'a: &a [x, x, x, x, x, x, x, x, x]',
  ...['b', 'c', 'd', 'e', 'f'].map((k, i) => {
    const prev = '*' + 'abcde'[i]!;
    return `${k}: &${k} [${Array(9).fill(prev).join(', ')}]`;
  }),
  'jobs: *f',
  '',
].join('\n');

describe.concurrent('oncely run: bad jobs files exit 2 before anything starts', () => {
  it.for<[string, string, RegExp]>([
    ['an empty file', '', /^error: jobs\.yaml: expected a mapping with a top-level "jobs:" list; got null$/m],
    [
      'a file of comments only',
      '# nothing here yet\n',
      /jobs\.yaml: expected a mapping with a top-level "jobs:" list; got null/,
    ],
    [
      'an unknown top-level key',
      `jobs:\n${JOB}settings:\n  retries: 3\n`,
      /jobs\.yaml: unknown top-level field "settings"; allowed: jobs/,
    ],
    [
      '"jobs" a string, not a list',
      'jobs: backup\n',
      /jobs\.yaml: "jobs" must be a list of jobs; got string "backup"/,
    ],
    [
      'a job that is a string, not a mapping',
      'jobs:\n  - ./backup.sh\n',
      /jobs\.yaml: job 1: must be a mapping with name, a trigger and command; got string "\.\/backup\.sh"/,
    ],
    [
      'every as a list (wrong type)',
      'jobs:\n  - name: a\n    every: [1m]\n    command: "true"\n',
      /job 1 \("a"\): field "every" must be a number of milliseconds or a string such as '30s'/,
    ],
    [
      'retries as a string "3"',
      'jobs:\n  - name: a\n    every: 1h\n    retries: "3"\n    command: "true"\n',
      /job 1 \("a"\): field "retries" must be a whole number from 0 to 100; got "3"/,
    ],
    [
      'a name that is a number',
      'jobs:\n  - name: 42\n    every: 1h\n    command: "true"\n',
      /job 1: field "name": job name must be a non-empty string/,
    ],
    [
      'command as a list',
      'jobs:\n  - name: a\n    every: 1h\n    command: [echo, hi]\n',
      /job 1 \("a"\): field "command" must be a non-empty string; got a list/,
    ],
    [
      'a cron that never fires',
      'jobs:\n  - name: a\n    cron: "0 0 30 2 *"\n    command: "true"\n',
      /job 1 \("a"\): field "cron": "0 0 30 2 \*" never fires/,
    ],
    [
      'a cron with 7 fields',
      'jobs:\n  - name: a\n    cron: "0 0 0 * * * 2030"\n    command: "true"\n',
      /job 1 \("a"\): field "cron": "0 0 0 \* \* \* 2030" is invalid: it has 7 fields; use 5/,
    ],
    [
      'a misspelt day name in a cron, in oncely’s words (not croner’s "configuration entry 5 (1-FRY)")',
      'jobs:\n  - name: a\n    cron: "0 9 * * MON-FRY"\n    command: "true"\n',
      /job 1 \("a"\): field "cron": "0 9 \* \* MON-FRY" is invalid: day-of-week "FRY" is not a day of the week: use 0-7 \(0 and 7 are Sunday\) or SUN-SAT \(did you mean "FRI"\?\)/,
    ],
    [
      'a misspelt field, with a did-you-mean',
      'jobs:\n  - name: a\n    cron: "0 9 * * *"\n    timezon: Europe/Berlin\n    command: "true"\n',
      /job 1 \("a"\): unknown field "timezon" \(did you mean "timezone"\?\); allowed: name, /,
    ],
    [
      'a cron day-of-month 32',
      'jobs:\n  - name: a\n    cron: "0 0 32 * *"\n    command: "true"\n',
      /field "cron": "0 0 32 \* \*" is invalid: day-of-month 32 is out of range \(1-31\)/,
    ],
    [
      'a key given twice in one job',
      'jobs:\n  - name: a\n    every: 1h\n    every: 2h\n    command: "true"\n',
      /^error: jobs\.yaml:4:5: YAML syntax error: Map keys must be unique/m,
    ],
    [
      'tab indentation',
      'jobs:\n\t- name: a\n',
      /^error: jobs\.yaml:2:1: YAML syntax error: Tabs are not allowed as indentation/m,
    ],
    [
      'two YAML documents',
      `jobs:\n${JOB}---\njobs:\n${JOB}`,
      /^error: jobs\.yaml:5:1: YAML syntax error: Source contains multiple documents; a jobs file is one document \(remove the "---" line\)$/m,
    ],
    [
      'an alias bomb ("billion laughs")',
      ALIAS_BOMB,
      /^error: jobs\.yaml: YAML error: Excessive alias count .*; a jobs file needs no more than a few aliases/m,
    ],
    [
      'a cwd that is a file',
      'jobs:\n  - name: a\n    every: 1h\n    command: "true"\n    cwd: jobs.yaml\n',
      /field "cwd": "jobs\.yaml" is not an existing directory \(resolved to .*jobs\.yaml\)/,
    ],
    [
      'an endAt before startAt, and a startAt that is no instant',
      'jobs:\n  - name: a\n    every: 1h\n    startAt: "2030-02-01T00:00:00Z"\n    endAt: "2030-01-01T00:00:00Z"\n    command: "true"\n  - name: b\n    every: 1h\n    startAt: soon\n    command: "true"\n',
      /job 1 \("a"\): field "endAt" \(2030-01-01T00:00:00\.000Z\) must be after startAt[\s\S]*job 2 \("b"\): field "startAt" must be a Date, an ISO-8601 string or epoch milliseconds; got "soon"/,
    ],
    [
      'an env name with "="',
      'jobs:\n  - name: a\n    every: 1h\n    command: "true"\n    env:\n      "A=B": x\n',
      /field "env": "A=B" is not a valid variable name/,
    ],
  ])('refuses %s', async ([, file, message], { expect }) => {
    const caseDir = mkdtempSync(join(dir, 'case-'));
    writeFileSync(join(caseDir, 'jobs.yaml'), file);
    const r = await runCli(['run', 'jobs.yaml', '--store', 'sqlite:never.db'], { cwd: caseDir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
    expect(existsSync(join(caseDir, 'never.db')), 'the store was opened').toBe(false);
  });
});

describe('shell metacharacters', () => {
  it('are not an error: the command is a /bin/sh script, and oncely values reach it only as environment variables', async () => {
    const caseDir = mkdtempSync(join(dir, 'shell-'));
    // A job name full of shell syntax: if oncely ever spliced it into the command, `touch` would run.
    const name = 'x";touch pwned;echo "$(touch pwned2)`touch pwned3`';
    writeFileSync(
      join(caseDir, 'jobs.yaml'),
      [
        'jobs:',
        `  - name: ${JSON.stringify(name)}`,
        '    every: 1s',
        // The command's own metacharacters are shell syntax, as the user wrote them: ; > $VAR.
        `    command: printf '%s' "$ONCELY_JOB" > name.txt; echo second > second.txt`,
        '',
      ].join('\n'),
    );
    const node = startCli(['run', 'jobs.yaml', '--store', 'sqlite:shell.db', '--grace', '5s'], {
      cwd: caseDir,
    });
    try {
      await node.waitForLog(/finished job=.* status=succeeded/, 20_000);
    } finally {
      node.process.kill('SIGTERM');
      await node.exited;
    }
    expect(readFileSync(join(caseDir, 'name.txt'), 'utf8')).toBe(name);
    expect(readFileSync(join(caseDir, 'second.txt'), 'utf8')).toBe('second\n');
    for (const file of ['pwned', 'pwned2', 'pwned3'])
      expect(existsSync(join(caseDir, file)), file).toBe(false);
  });
});
