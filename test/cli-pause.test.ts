/**
 * Pauses from the command line (docs/pause.md): `oncely pause J --note --actor`, `pause`/`resume J
 * --schedule ID`, and where a pause shows — `oncely status` (paused jobs and paused stored
 * schedules, with since, actor and note), `oncely schedules` (`(paused)` and a line; `--json`
 * `pause`), `oncely history` (a `paused` span as one line) and `oncely audit`. Runs the built CLI
 * (`npm run build` first).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduler, openStore } from '../src/index.js';
import { encodeHistory } from '../src/scheduler/finish/history.js';
import { keys } from '../src/scheduler/keys.js';
import { requireBuiltCli, runCli } from './fixtures/cli/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-pause-'));
const store = `sqlite:${join(dir, 'pause.db')}`;
const oncely = (...args: string[]) => runCli([...args, '--store', store]);
const FIRST = Date.UTC(2026, 11, 2, 9, 0);

beforeAll(async () => {
  requireBuiltCli();
  const s = await openStore(store);
  try {
    const scheduler = createScheduler({ store: s, logger: false });
    // A node records the job `other` (status lists recorded jobs).
    scheduler.define('other', {}, () => {});
    await scheduler.start();
    await scheduler.stop();
    await scheduler.schedules.upsert([
      { id: 'mail:a', job: 'mail', every: '1h' },
      { id: 'mail:b', job: 'mail', every: '1h' },
      { id: 'other:a', job: 'other', every: '1h' },
    ]);
    // The one entry a pause of mail:a left: 14 fire times, a minute apart.
    const when = new Date(FIRST + 20 * 60_000);
    await s.put(
      keys.history({ job: 'mail', scheduleId: 'mail:a', fireTime: FIRST, shard: undefined }, 1),
      encodeHistory({
        job: 'mail',
        scheduleId: 'mail:a',
        fireTime: new Date(FIRST),
        node: 'n1',
        attempt: 1,
        token: 7,
        source: 'schedule',
        status: 'skipped',
        reason: 'paused',
        span: { first: new Date(FIRST), last: new Date(FIRST + 13 * 60_000), count: 14 },
        startedAt: when,
        finishedAt: when,
      }),
    );
  } finally {
    await s.close();
  }
}, 30_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('oncely pause / resume', () => {
  it('pauses one stored schedule with a note and an actor; schedules, status and audit show it', async () => {
    const r = await oncely(
      'pause',
      'mail',
      '--schedule',
      'mail:a',
      '--note',
      'on holiday',
      '--actor',
      'alice',
    );
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toContain('paused schedule "mail:a" of "mail"');

    const text = await oncely('schedules', '--job', 'mail');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^mail:a\s.*\(paused\)/m);
    expect(text.stdout).toMatch(/^mail:a: paused since \d{4}-\d\d-\d\dT[\d:.]+Z by alice: on holiday$/m);
    expect(text.stdout).not.toMatch(/^mail:b: paused/m);

    const json = JSON.parse((await oncely('schedules', '--job', 'mail', '--json')).stdout) as {
      id: string;
      pause?: { since: string; actor?: string; note?: string };
    }[];
    expect(json.map((s) => [s.id, s.pause?.actor, s.pause?.note])).toEqual([
      ['mail:a', 'alice', 'on holiday'],
      ['mail:b', undefined, undefined],
    ]);

    const status = await oncely('status');
    expect(status.stdout).toMatch(/^paused schedule mail:a \(job mail\) since \S+ by alice: on holiday$/m);
    const statusJson = JSON.parse((await oncely('status', '--json')).stdout) as {
      pausedSchedules: { id: string; job: string; note?: string }[];
    };
    expect(statusJson.pausedSchedules).toMatchObject([{ id: 'mail:a', job: 'mail', note: 'on holiday' }]);

    expect((await oncely('resume', 'mail', '--schedule', 'mail:a', '--actor', 'carol')).code).toBe(0);
    expect((await oncely('schedules', '--job', 'mail')).stdout).not.toContain('(paused)');
    const audit = JSON.parse((await oncely('audit', '--schedule', 'mail:a', '--json')).stdout) as {
      action: string;
      actor: string;
      note?: string;
    }[];
    expect(audit.slice(0, 2).map((e) => [e.action, e.actor, e.note])).toEqual([
      ['schedules.resume', 'carol', undefined],
      ['schedules.pause', 'alice', 'on holiday'],
    ]);
  });

  it('pauses a whole job with a note; status shows who and why', async () => {
    const r = await oncely('pause', 'other', '--note', 'mail provider down', '--actor', 'bob');
    expect(r.code).toBe(0);
    const status = await oncely('status');
    expect(status.stdout).toMatch(/^paused other since \S+ by bob: mail provider down$/m);
    expect((await oncely('resume', 'other', '--actor', 'bob')).code).toBe(0);
  });

  it('a schedule id not stored, or of another job, exits 2 naming what is there', async () => {
    const missing = await oncely('pause', 'mail', '--schedule', 'nope');
    expect([missing.code, missing.stderr]).toEqual([
      2,
      expect.stringContaining('no stored schedule has the id "nope"'),
    ]);
    const other = await oncely('resume', 'other', '--schedule', 'mail:b');
    expect([other.code, other.stderr]).toEqual([2, expect.stringContaining('is of job "mail", not "other"')]);
    const long = await oncely('pause', 'mail', '--note', 'x'.repeat(1001));
    expect(long.code).toBe(2);
  });

  it('oncely history prints a paused span as one line', async () => {
    const r = await oncely('history', '--job', 'mail');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('paused: 14 fire times 2026-12-02T09:00:00.000Z–09:13:00.000Z');
    const [entry] = JSON.parse((await oncely('history', '--job', 'mail', '--json')).stdout) as {
      reason: string;
      span: { first: number; last: number; count: number };
    }[];
    expect(entry).toMatchObject({ reason: 'paused', span: { count: 14 } });
  });
});
