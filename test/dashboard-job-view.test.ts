/**
 * What a new user read wrong on the dashboard (issue 31): a job whose runs all succeeded on their
 * retry showed `6 ✓ · 6 ✗` (history records counted, not occurrences); the job page put its
 * stored schedules above its history; options read `lockAtMostForMs=30000` instead of what the
 * user wrote (`lockAtMostFor: 30s`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { durationText, optionsText } from '../src/dashboard/option-view.js';
import { type Dashboard, startDashboard } from '../src/dashboard/server.js';
import { createScheduler, openStore, type Scheduler, type Store } from '../src/index.js';
import { testPrefix } from './harness/backends.js';

let store: Store;
let scheduler: Scheduler;
let dashboard: Dashboard;

beforeAll(async () => {
  store = await openStore(`memory:${testPrefix('dashview')}`);
  scheduler = createScheduler({ store, node: 'node-v', logger: false });
  scheduler.define(
    'flaky',
    { retries: 1, retryDelay: '10ms', lockAtMostFor: '30s', timeout: '5m' },
    (ctx) => {
      if (ctx.attempt === 1) throw new Error('first attempt fails');
    },
  );
  // Jittered, with its next fire time excluded: what will start is not the nominal fire times.
  const hour = 3_600_000;
  const nextHour = Math.ceil((Date.now() + 1) / hour) * hour;
  scheduler.define(
    'spread-out',
    {
      every: '1h',
      jitter: '30m',
      exclude: [{ from: new Date(nextHour), to: new Date(nextHour + 1) }],
    },
    () => {},
  );
  await scheduler.start();
  for (let i = 0; i < 3; i++) {
    const done = new Promise((resolve) => scheduler.once('succeeded', resolve));
    await scheduler.trigger('flaky');
    await done;
  }
  await scheduler.schedules.upsert(
    Array.from({ length: 60 }, (_, i) => ({
      id: `s-${String(i).padStart(2, '0')}`,
      job: 'flaky',
      at: '2999-01-01T00:00:00Z',
    })),
  );
  dashboard = await startDashboard({ store, scheduler, port: 0 });
}, 30_000);

afterAll(async () => {
  await dashboard?.close();
  await scheduler?.stop();
  await store?.close();
});

const page = async (path: string) => (await fetch(dashboard.url + path)).text();

describe('the dashboard’s view of a job', () => {
  it('shows the next starts as scheduler.next() gives them: jitter and exclusions applied', async () => {
    const next = await scheduler.next('spread-out', { count: 5 });
    expect(next).toHaveLength(5);
    const text = await page('/jobs/spread-out');
    const block = /<dd class="next-starts">[\s\S]*?<\/dd>/.exec(text)?.[0] ?? '';
    const shown = [...block.matchAll(/datetime="([^"]+)"/g)].map((m) => m[1]);
    expect(shown).toEqual(next.map((d) => d.toISOString()));
    // Not the nominal fire times: the excluded next hour is not there, and every start is its
    // hour plus the one offset the job's jitter (per schedule) gives.
    const hour = 3_600_000;
    expect(next[0]!.getTime()).toBeGreaterThanOrEqual(Math.ceil((Date.now() + 1) / hour) * hour + hour);
    expect(new Set(next.map((d) => d.getTime() % hour)).size).toBe(1);
  });

  it('counts occurrences: three runs that succeeded on their retry are 3 ✓ · 0 ✗, with 3 retries', async () => {
    const text = await page('/');
    const row = /<tr data-job="flaky">[\s\S]*?<\/tr>/.exec(text)?.[0] ?? '';
    expect(row).toContain('<span class="ok">3 ✓</span> · <span class="ko">0 ✗</span>');
    expect(row).toContain('(3 retries)');
  });

  it('lists the history first, then one page of stored schedules below it', async () => {
    const text = await page('/jobs/flaky');
    const history = text.indexOf('<h2>History');
    const schedules = text.indexOf('<h2 id="schedules">Stored schedules');
    expect(history).toBeGreaterThan(0);
    expect(schedules).toBeGreaterThan(history);
    expect(text.indexOf('<ol class="timeline">')).toBeLessThan(schedules);
    expect(text).toContain('data-page="next-schedules"');
  });

  it('shows options by the names and forms a user writes', async () => {
    const text = await page('/jobs/flaky');
    expect(text).toContain('lockAtMostFor: 30s');
    expect(text).toContain('timeout: 5m');
    expect(text).toContain('retries: 1');
    expect(text).not.toMatch(/ForMs|=30000/);
    expect(durationText(90_000)).toBe('90s');
    expect(durationText(7_200_000)).toBe('2h');
    expect(durationText(250)).toBe('250ms');
    expect(optionsText({ lockAtLeastForMs: 0, timeoutMs: null, overlap: 'skip' })).toBe(
      'lockAtLeastFor: 0s · overlap: skip',
    );
  });
});
