/**
 * `oncely run jobs.yaml 2>&1 | head -3`: once `head` exits, every write to stdout and stderr fails
 * with EPIPE. The node used to exit 1 two seconds later (and once left a run `running` in
 * history); it must go on running its jobs, writing nowhere, and shut down cleanly on SIGTERM.
 * Runs the built CLI (`npm run build` first).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduler, type HistoryEntry, openStore } from '../src/index.js';
import { CLI, cliEnv, requireBuiltCli, until } from './fixtures/cli/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-broken-pipe-'));
beforeAll(() => requireBuiltCli());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function history(url: string): Promise<HistoryEntry[]> {
  const store = await openStore(url);
  try {
    return await createScheduler({ store, logger: false }).history({ limit: 1000 });
  } finally {
    await store.close();
  }
}

describe('oncely run with its output piped into a reader that goes away', () => {
  it('keeps running its jobs, writing nowhere, and records every run on SIGTERM', async () => {
    writeFileSync(
      join(dir, 'jobs.yaml'),
      'jobs:\n  - name: tick\n    every: 1s\n    command: "echo hello; sleep 0.3"\n',
    );
    const url = `sqlite:${join(dir, 'pipe.db')}`;
    const child = spawn(process.execPath, [CLI, 'run', 'jobs.yaml', '--store', url, '--node', 'piped'], {
      cwd: dir,
      env: cliEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let code: number | null | undefined;
    void exited.then((c) => {
      code = c;
    });
    // `head -3`: three lines, then the reading end of both pipes is closed.
    let seen = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      seen += chunk;
    });
    await until(() => seen.split('\n').length > 3 || code !== undefined, 30_000, 'three log lines');
    child.stderr.destroy();
    child.stdout.destroy();
    const closedAt = Date.now();

    // The node goes on: runs after the pipes closed succeed, and it is still there.
    await until(() => code !== undefined || Date.now() - closedAt > 4_500, 10_000, 'a few seconds');
    expect(code, 'the node exited after its output pipe closed').toBeUndefined();
    const later = (await history(url)).filter((h) => h.startedAt.getTime() > closedAt);
    expect(later.filter((h) => h.status === 'succeeded').length).toBeGreaterThanOrEqual(2);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const all = await history(url);
    expect(all.filter((h) => h.status === 'running')).toEqual([]);
    expect(all.every((h) => h.node === 'piped')).toBe(true);
  }, 60_000);
});
