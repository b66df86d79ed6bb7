/**
 * What a new user met in the inspection commands (issue 10): `oncely locks` lists only leases held
 * by running work (and locks), counting the "done" holds of finished occurrences unless `--all`;
 * `oncely history --job` of a job the store knows nothing of says so; a PostgreSQL store URL
 * carries `oncely_prepared_statements` (PgBouncer transaction mode) through the CLI. Runs the
 * built CLI (`npm run build` first) against a SQLite file a scheduler in this process writes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduler, openStore, type Scheduler, type Store } from '../src/index.js';
import { requireBuiltCli, runCli } from './fixtures/cli/cli.js';
import { nextEvent } from './fixtures/dashboard/cluster.js';
import { serverBackend, testPrefix } from './harness/backends.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-inspect-'));
const url = `sqlite:${join(dir, 'inspect.db')}`;
const postgres = serverBackend('postgres');

let store: Store;
let scheduler: Scheduler;
let finishSlow: () => void = () => {};

beforeAll(async () => {
  requireBuiltCli();
  store = await openStore(url);
  scheduler = createScheduler({ store, node: 'node-t', pollInterval: '250ms' });
  scheduler.define('finished', {}, async () => 'done');
  scheduler.define(
    'slow',
    {},
    () =>
      new Promise<void>((resolve) => {
        finishSlow = resolve;
      }),
  );
  scheduler.define('never-run', { cron: '0 3 1 1 *' }, async () => {});
  await scheduler.start();
  const finished = nextEvent(scheduler, 'succeeded', (e) => e.job === 'finished');
  await scheduler.trigger('finished');
  await finished;
  const started = nextEvent(scheduler, 'started', (e) => e.job === 'slow');
  await scheduler.trigger('slow');
  await started;
  await scheduler.pause('paused-only');
}, 60_000);

afterAll(async () => {
  finishSlow();
  await scheduler?.stop();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface LockRow {
  key: string;
  owner: string;
  kind: string;
  state?: string;
}

describe('oncely locks', () => {
  it('leaves out the "done" holds of finished occurrences and counts them; --all lists them', async () => {
    const lock = await store.tryLock({ name: 'held-by-me', lockAtMostFor: '1m' });
    expect(lock).not.toBeNull();
    try {
      const text = await runCli(['locks', '--store', url]);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain('lock:held-by-me');
      expect(text.stdout).toMatch(/occ\|slow\|\S+ +occurrence \(running\)/);
      expect(text.stdout).not.toContain('occ|finished|');
      expect(text.stdout).toMatch(
        /^1 "done" hold of finished occurrences not listed \(--all lists them\)\.$/m,
      );

      const json = await runCli(['locks', '--store', url, '--json']);
      expect(json.code, json.stderr).toBe(0);
      const rows = JSON.parse(json.stdout) as LockRow[];
      expect(rows.some((r) => r.key.startsWith('occ|finished|'))).toBe(false);
      expect(rows.find((r) => r.key.startsWith('occ|slow|'))).toMatchObject({
        kind: 'occurrence',
        state: 'running',
      });
      expect(rows.find((r) => r.key === 'lock:held-by-me')).toMatchObject({
        kind: 'lock',
        owner: lock!.owner,
      });

      const all = await runCli(['locks', '--store', url, '--json', '--all']);
      expect(all.code, all.stderr).toBe(0);
      const everything = JSON.parse(all.stdout) as LockRow[];
      expect(everything.find((r) => r.key.startsWith('occ|finished|'))).toMatchObject({
        kind: 'occurrence',
        state: 'hold',
        owner: 'node-t',
      });
      expect(everything.length).toBe(rows.length + 1);
      const allText = await runCli(['locks', '--store', url, '--all']);
      expect(allText.stdout).toMatch(/occ\|finished\|\S+ +occurrence \(hold\)/);
      expect(allText.stdout).not.toContain('not listed');
    } finally {
      await lock?.release();
    }
  });
});

describe('oncely history --job', () => {
  it('says that a job the store knows nothing of is unknown, naming the known ones', async () => {
    const r = await runCli(['history', '--store', url, '--job', 'nosuchjob']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('No job named "nosuchjob" is known to this store');
    expect(r.stdout).toContain('known jobs: finished, never-run, slow');
    expect(r.stdout).not.toContain('No runs recorded');
    // --json stays a bare array; the warning goes to stderr.
    const json = await runCli(['history', '--store', url, '--job', 'nosuchjob', '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([]);
    expect(json.stderr).toContain('warning: No job named "nosuchjob" is known');
  });

  it('a known job without runs (defined, or only paused) has "No runs recorded."', async () => {
    for (const job of ['never-run', 'paused-only']) {
      const r = await runCli(['history', '--store', url, '--job', job]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe('No runs recorded.');
      expect(r.stderr).toBe('');
    }
    const ran = await runCli(['history', '--store', url, '--job', 'finished']);
    expect(ran.stdout).toMatch(/finished +- +1 +succeeded +node-t/);
  });

  it('a skipped fire time says why: the run it overlapped, by fire time, node and token', async () => {
    // `slow` is still running from beforeAll; a second trigger meets its gate and is skipped.
    const skipped = nextEvent(scheduler, 'skipped', (e) => e.job === 'slow');
    await scheduler.trigger('slow');
    const e = await skipped;
    expect(e.reason).toBe('overlap');
    const running = (await scheduler.history({ job: 'slow' })).find((h) => h.status === 'running')!;
    expect(e.by).toEqual({ fireTime: running.fireTime, node: 'node-t', token: running.token });
    const r = await runCli(['history', '--store', url, '--job', 'slow']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(
        `skipped +node-t +manual +\\S+ +overlap: the run of ${running.fireTime.toISOString()} \\(on node-t, token ${running.token}\\) was still going`,
      ),
    );
    const json = await runCli(['history', '--store', url, '--job', 'slow', '--json']);
    const entry = (JSON.parse(json.stdout) as { status: string; reason?: string; by?: object }[]).find(
      (h) => h.status === 'skipped',
    );
    expect(entry).toMatchObject({
      reason: 'overlap',
      by: { fireTime: running.fireTime.toISOString(), node: 'node-t', token: running.token },
    });
  });
});

describe.skipIf(postgres.skip)('a PostgreSQL store URL with oncely_prepared_statements (PgBouncer)', () => {
  it('is taken by every command; a bad value exits 2 naming the parameter, never the password', async () => {
    const prefix = testPrefix('cli_ps');
    const base = postgres.url!;
    const sep = base.includes('?') ? '&' : '?';
    // Something under the prefix: read-only commands refuse an empty one (cli-store-presence.test.ts).
    const seeded = await openStore(base, { prefix });
    await createScheduler({ store: seeded, logger: false }).pause('seeded');
    await seeded.close();
    const ok = await runCli([
      'status',
      '--store',
      `${base}${sep}oncely_prepared_statements=false`,
      '--prefix',
      prefix,
    ]);
    expect(ok.code, ok.stderr).toBe(0);
    const bad = await runCli([
      'status',
      '--store',
      `${base}${sep}oncely_prepared_statements=maybe`,
      '--prefix',
      prefix,
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('oncely_prepared_statements must be true or false; got "maybe"');
    const password = new URL(base).password;
    if (password !== '') expect(bad.stderr).not.toContain(password);
  });
});

describe('oncely status and the dashboard agree on a job no live node defines', () => {
  it('shows "not scheduled" for it, where a live job has its next fire time', async () => {
    const gone = `sqlite:${join(dir, 'gone.db')}`;
    const s = await openStore(gone);
    const left = createScheduler({ store: s, node: 'node-gone', logger: false });
    left.define('orphan', { cron: '0 3 * * *' }, async () => {});
    await left.start();
    await left.stop();
    const live = createScheduler({ store: s, node: 'node-live', logger: false });
    live.define('kept', { cron: '0 4 * * *' }, async () => {});
    await live.start();
    try {
      const r = await runCli(['status', '--store', gone]);
      expect(r.code, r.stderr).toBe(0);
      const row = (job: string) => r.stdout.split('\n').find((l) => l.startsWith(`${job} `)) ?? '';
      expect(row('orphan')).toMatch(
        /^orphan\s+cron '0 3 \* \* \*' UTC\s+no\s+not scheduled \(no live node\)\s+-\s+-\s+\(none live\)$/,
      );
      expect(row('kept')).toMatch(/^kept\s+cron '0 4 \* \* \*' UTC\s+no\s+\d{4}-\d\d-\d\dT04:00:00\.000Z\s/);
      // The dashboard's words for the same job.
      const { nextFireCell, NO_LIVE_NODE } = await import('../src/dashboard/pages/common.js');
      const [orphan] = (await live.jobs()).filter((j) => j.name === 'orphan');
      expect(String(nextFireCell(orphan!, () => '' as never))).toContain(NO_LIVE_NODE);
      expect(NO_LIVE_NODE).toMatch(/^not scheduled/);
    } finally {
      await live.stop();
      await s.close();
    }
  });
});
