/**
 * How `oncely run` runs one command: its environment (ONCELY_*, shards, job env, cwd), output
 * captured into history, failures, `timeout` killing the whole process group, and shutdown —
 * SIGTERM waits for a running command, the grace period ends with the command killed, a second
 * signal exits at once. One node per test on its own SQLite file. Runs the built CLI (`npm run
 * build` first).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type CliProcess, requireBuiltCli, runCli, startCli, until } from './fixtures/cli/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-run-'));
beforeAll(() => requireBuiltCli());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const started: CliProcess[] = [];
afterEach(() => {
  for (const n of started.splice(0))
    if (n.process.exitCode === null && n.process.signalCode === null) n.process.kill('SIGKILL');
});

interface Entry {
  job: string;
  fireTime: string;
  scheduleId?: string;
  shard?: number;
  node: string;
  attempt: number;
  status: string;
  error?: string;
  output?: string;
}

/** A work directory with a jobs file, and a node running it. */
async function startNode(yaml: string, flags: string[] = [], prepare?: (work: string) => void) {
  const work = mkdtempSync(join(dir, 'case-'));
  prepare?.(work);
  writeFileSync(join(work, 'jobs.yaml'), yaml);
  const store = ['--store', `sqlite:${join(work, 'oncely.db')}`];
  const node = startCli(['run', 'jobs.yaml', ...store, '--node', 'runner-1', ...flags], { cwd: work });
  started.push(node);
  await node.waitForLog(/ ready {4}node=runner-1 /, 60_000);
  const history = async (job: string): Promise<Entry[]> => {
    const r = await runCli(['history', '--json', '--job', job, ...store]);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Entry[];
  };
  const trigger = async (job: string) => {
    const r = await runCli(['trigger', job, ...store]);
    expect(r.code, r.stderr).toBe(0);
  };
  const waitForStatus = async (job: string, statuses: string[], count = 1): Promise<Entry[]> => {
    let last: Entry[] = [];
    const deadline = Date.now() + 30_000;
    for (;;) {
      last = await history(job);
      if (last.filter((e) => statuses.includes(e.status)).length >= count) return last;
      if (Date.now() > deadline)
        throw new Error(`no ${statuses} run of ${job}: ${JSON.stringify(last)}\n${node.stderr()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  return { work, node, store, history, trigger, waitForStatus };
}

/** Gone, or a zombie nobody reaped yet (no init in a container): either way it runs no more. */
function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

function readPid(path: string): number {
  return Number(readFileSync(path, 'utf8').trim());
}

describe('oncely run: one command per occurrence', () => {
  it('gives the command ONCELY_* variables, job env and cwd, and keeps its output in history', async () => {
    const yaml = [
      'jobs:',
      '  - name: envdump',
      "    shards: ['north', 'south']",
      '    cwd: sub',
      '    env:',
      '      GREETING: "hello world"',
      '      ONCELY_JOB: not-this',
      '    command: env | grep -E "^(ONCELY_|GREETING=)" | sort > "env-$ONCELY_SHARD_INDEX.txt"; pwd; echo to-stderr >&2',
      '  - name: plain',
      '    command: env | grep ^ONCELY_SHARD_ | sort > plain.txt',
      '',
    ].join('\n');
    const n = await startNode(yaml, [], (work) => mkdirSync(join(work, 'sub')));
    const work = n.work;
    await n.trigger('envdump');
    await n.trigger('plain');
    const entries = await n.waitForStatus('envdump', ['succeeded'], 2);
    // Finished, not just begun: the shell creates plain.txt (empty) before env writes to it.
    await n.waitForStatus('plain', ['succeeded'], 1);
    for (const shard of [0, 1]) {
      const env = Object.fromEntries(
        readFileSync(join(work, `sub/env-${shard}.txt`), 'utf8')
          .trim()
          .split('\n')
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      const entry = entries.find((e) => e.shard === shard)!;
      expect(env).toEqual({
        GREETING: 'hello world',
        ONCELY_JOB: 'envdump',
        ONCELY_FIRE_TIME: entry.fireTime,
        ONCELY_NODE: 'runner-1',
        ONCELY_TOKEN: expect.stringMatching(/^\d+$/),
        ONCELY_ATTEMPT: '1',
        ONCELY_SCHEDULE_ID: entry.scheduleId,
        ONCELY_SHARD_INDEX: String(shard),
        ONCELY_SHARD_COUNT: '2',
        ONCELY_SHARD_PARAM: shard === 0 ? 'north' : 'south',
      });
      expect(env.ONCELY_FIRE_TIME).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(entry.scheduleId).toMatch(/^manual:/);
      // Output (stdout and stderr, as they came) is kept in history and logged line by line.
      expect(entry.output).toBe(`${join(work, 'sub')}\nto-stderr\n`);
    }
    expect(n.node.stderr()).toMatch(/ out job=envdump fire=\S+ shard=0 \| .*\/sub$/m);
    expect(n.node.stderr()).toMatch(/ err job=envdump fire=\S+ shard=1 \| to-stderr$/m);
    // Not sharded: the shard variables are set and empty.
    expect(readFileSync(join(work, 'plain.txt'), 'utf8')).toBe(
      'ONCELY_SHARD_COUNT=\nONCELY_SHARD_INDEX=\nONCELY_SHARD_PARAM=\n',
    );
  }, 90_000);

  it('records a non-zero exit as failed, with the exit code and the output tail', async () => {
    const n = await startNode(
      'jobs:\n  - name: broken\n    command: echo "about to fail"; echo "bad thing" >&2; exit 3\n',
    );
    await n.trigger('broken');
    const [entry] = await n.waitForStatus('broken', ['failed']);
    expect(entry!.status).toBe('failed');
    expect(entry!.error).toContain('command exited with code 3');
    expect(entry!.error).toContain('about to fail\nbad thing\n');
    await n.node.waitForLog(
      / finished job=broken .* status=failed duration=\S+ error="command exited with code 3/,
    );
  }, 90_000);

  it('kills the whole process group when the timeout fires (history: timed-out)', async () => {
    const n = await startNode(
      'jobs:\n  - name: sleeper\n    timeout: 1s\n    command: sleep 30 & echo $! > sleep.pid; wait\n',
    );
    await n.trigger('sleeper');
    const [entry] = await n.waitForStatus('sleeper', ['timed-out']);
    expect(entry!.error).toMatch(/timed out after 1000 ms/);
    // `sleep` is the shell's child: only a process-group kill reaches it.
    const pid = readPid(join(n.work, 'sleep.pid'));
    await until(() => processGone(pid), 10_000, `sleep (pid ${pid}) to be killed`);
    await n.node.waitForLog(/ finished job=sleeper .* status=timed-out /);
  }, 90_000);
  it('starts a retry only after the timed-out attempt’s command has ended', async () => {
    // The command ignores SIGTERM (as does its `sleep`), so it outlives its 1 s timeout by ~0.5 s;
    // the retry (100 ms after the timeout) must wait for it instead of running alongside.
    const n = await startNode(
      [
        'jobs:',
        '  - name: stubborn',
        '    timeout: 1s',
        '    retries: 1',
        '    retryDelay: 100ms',
        `    command: trap '' TERM; echo "start $ONCELY_ATTEMPT" >> log.txt; sleep 1.5; echo "end $ONCELY_ATTEMPT" >> log.txt`,
        '',
      ].join('\n'),
    );
    await n.trigger('stubborn');
    const entries = await n.waitForStatus('stubborn', ['timed-out'], 2);
    expect(entries.map((e) => [e.attempt, e.status])).toEqual([
      [2, 'timed-out'],
      [1, 'timed-out'],
    ]);
    await until(
      () => readFileSync(join(n.work, 'log.txt'), 'utf8').includes('end 2'),
      15_000,
      'attempt 2 to end',
    );
    expect(readFileSync(join(n.work, 'log.txt'), 'utf8')).toBe('start 1\nend 1\nstart 2\nend 2\n');
    expect(n.node.stderr()).toMatch(
      / waiting {2}job=stubborn .*: attempt 2 starts once the previous attempt's command has exited/,
    );
  }, 90_000);
});

describe('oncely run: shutdown', () => {
  it('on SIGTERM lets a running command finish, then exits 0', async () => {
    const n = await startNode(
      'jobs:\n  - name: short\n    command: touch started; sleep 2; echo finished > done.txt\n',
    );
    await n.trigger('short');
    await until(() => existsSync(join(n.work, 'started')), 30_000, 'the command to start');
    const t0 = Date.now();
    n.node.process.kill('SIGTERM');
    const exit = await n.node.exited;
    expect(exit, n.node.stderr()).toEqual({ code: 0, signal: null });
    expect(Date.now() - t0).toBeGreaterThan(1000);
    expect(readFileSync(join(n.work, 'done.txt'), 'utf8')).toBe('finished\n');
    expect(n.node.stderr()).toMatch(/ stopping node=runner-1 \(SIGTERM\)/);
    expect((await n.history('short'))[0]?.status).toBe('succeeded');
  }, 90_000);

  it('after --grace kills what is still running, records it abandoned, and exits 0', async () => {
    const n = await startNode('jobs:\n  - name: long\n    command: sleep 30 & echo $! > sleep.pid; wait\n', [
      '--grace',
      '1s',
    ]);
    await n.trigger('long');
    await until(() => existsSync(join(n.work, 'sleep.pid')), 30_000, 'the command to start');
    const pid = readPid(join(n.work, 'sleep.pid'));
    const t0 = Date.now();
    n.node.process.kill('SIGTERM');
    const exit = await n.node.exited;
    expect(exit, n.node.stderr()).toEqual({ code: 0, signal: null });
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(processGone(pid)).toBe(true);
    expect(n.node.stderr()).toMatch(/ finished job=long .* status=abandoned /);
    expect((await n.history('long'))[0]?.status).toBe('abandoned');
  }, 90_000);

  it('exits at once (code 1) on a second signal, killing running commands', async () => {
    const n = await startNode('jobs:\n  - name: long\n    command: sleep 30 & echo $! > sleep.pid; wait\n');
    await n.trigger('long');
    await until(() => existsSync(join(n.work, 'sleep.pid')), 30_000, 'the command to start');
    const pid = readPid(join(n.work, 'sleep.pid'));
    n.node.process.kill('SIGTERM');
    await n.node.waitForLog(/ stopping node=runner-1/);
    n.node.process.kill('SIGINT');
    const exit = await n.node.exited;
    expect(exit).toEqual({ code: 1, signal: null });
    await until(() => processGone(pid), 5000, `sleep (pid ${pid}) to be killed`);
  }, 90_000);
});
