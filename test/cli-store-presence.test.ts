/**
 * Read-only commands never create a store: `oncely status --store sqlite:./typo.db` used to create
 * typo.db and say "No jobs recorded in this store yet" (the same with a forgotten `--prefix`).
 * Now a missing file, or a prefix with nothing under it, is said so, naming the URL and prefix.
 * Runs the built CLI (`npm run build` first).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduler, openStore } from '../src/index.js';
import { requireBuiltCli, runCli } from './fixtures/cli/cli.js';
import { serverBackend, testPrefix } from './harness/backends.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-presence-'));
const real = join(dir, 'real.db');
beforeAll(async () => {
  requireBuiltCli();
  const store = await openStore(`sqlite:${real}`);
  await createScheduler({ store, logger: false }).pause('some-job');
  await store.close();
}, 30_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const READ_ONLY = [['status'], ['history'], ['locks'], ['nodes'], ['schedules'], ['schedules', 'count']];

describe('read-only commands on a store that is not there', () => {
  it.each(READ_ONLY)('%s: a missing SQLite file is named and not created', async (...args) => {
    const typo = join(dir, 'typo.db');
    const r = await runCli([...args, '--store', `sqlite:${typo}`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no store at sqlite:${typo}: the file "${typo}" does not exist`);
    expect(r.stdout).toBe('');
    expect(existsSync(typo)).toBe(false);
  });

  it('a SQLite file without oncely tables under the prefix names the prefixes it has', async () => {
    const r = await runCli(['status', '--store', `sqlite:${real}`, '--prefix', 'team_']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `sqlite:${real} has no oncely store under prefix "team_" (it has one under --prefix oncely_)`,
    );
    expect(r.stdout).not.toContain('No jobs recorded');
    // The right prefix still works, and control commands may write to an existing file.
    const ok = await runCli(['status', '--store', `sqlite:${real}`]);
    expect(ok.code, ok.stderr).toBe(0);
  });

  const postgres = serverBackend('postgres');
  it.skipIf(postgres.skip !== undefined)(
    'a server store whose schema exists but holds nothing under the prefix says so, naming it',
    async () => {
      // Created (by a program that never used it); without a schema, see cli-store-presence-servers.
      const prefix = testPrefix('empty');
      await (await openStore(postgres.url!, { prefix })).close();
      const r = await runCli(['status', '--store', postgres.url!, '--prefix', prefix]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `postgres://postgres:\\*\\*\\*@\\S+ has no oncely store under prefix "${prefix}": no job, node, run or lock`,
        ),
      );
      expect(r.stderr).not.toContain('oncely-test-pw');
    },
  );
});
