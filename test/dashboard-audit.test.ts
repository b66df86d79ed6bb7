/**
 * The dashboard's audit trail (issue 32 item 8): `/audit` renders the entries newest first with
 * every user value escaped (an actor `<script>…`), filters by job and schedule, pages on with
 * "Older changes"; `/api/audit` answers JSON with a `Link` to the next page; a paused job's page
 * shows who paused it and why.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dashboard } from '../src/dashboard/server.js';
import { type Cluster, dashboardFor, startCluster } from './fixtures/dashboard/cluster.js';

const EVIL = '<script>alert("x")</script>';
let cluster: Cluster;
let dashboard: Dashboard;

async function get(path: string) {
  const res = await fetch(dashboard.url + path, { redirect: 'manual' });
  return { res, text: await res.text() };
}

beforeAll(async () => {
  cluster = await startCluster('memory:');
  const s = cluster.scheduler;
  await s.schedules.upsert(
    { id: 'report:1', job: 'nightly-report', cron: '0 3 1 1 *', data: { n: 1 } },
    { actor: 'alice' },
  );
  await s.pause('nightly-report', { note: `${EVIL} maintenance`, actor: EVIL });
  dashboard = await dashboardFor(cluster);
}, 30_000);

afterAll(async () => {
  await dashboard?.close();
  await cluster?.close();
});

describe('/audit', () => {
  it('renders the trail with every value escaped, filtered by job', async () => {
    const { res, text } = await get('/audit?job=nightly-report');
    expect(res.status).toBe(200);
    expect(text).toContain('<h1>Audit trail</h1>');
    expect(text).not.toContain('<script>');
    expect(text).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    const actions = [...text.matchAll(/<tr data-action="([^"]+)">/g)].map((m) => m[1]);
    expect(actions.slice(0, 2)).toEqual(['pause', 'schedules.upsert']);
    expect(text).toContain('aria-current="page">Audit</a>');
  });

  it('pages with "Older changes", and by schedule', async () => {
    const first = await get('/audit?job=nightly-report&limit=1');
    const older = /href="([^"]+)" data-page="older"/.exec(first.text)?.[1]?.replace(/&amp;/g, '&');
    expect(older).toMatch(/after=/);
    const second = await get(older!);
    expect(second.text).toMatch(/<tr data-action="schedules.upsert">/);
    const bySchedule = await get('/audit?schedule=report%3A1');
    expect([...bySchedule.text.matchAll(/<tr data-action="([^"]+)">/g)].map((m) => m[1])).toEqual([
      'schedules.upsert',
    ]);
    expect((await get('/audit?after=nope')).res.status).toBe(400);
  });

  it('/api/audit answers JSON newest first with a Link to the next page', async () => {
    const { res, text } = await get('/api/audit?job=nightly-report&limit=1');
    expect(res.status).toBe(200);
    const [entry] = JSON.parse(text) as Array<{ actor: string; action: string; at: string; note: string }>;
    expect(entry).toMatchObject({ actor: EVIL, action: 'pause', note: `${EVIL} maintenance` });
    expect(res.headers.get('link')).toMatch(
      /^<\/api\/audit\?job=nightly-report&limit=1&after=[^>]+>; rel="next"$/,
    );
  });

  it("a paused job's page says since when, by whom and why, escaped, and links to its trail", async () => {
    const { text } = await get('/jobs/nightly-report');
    expect(text).toMatch(/class="muted pause-info">since \d{4}-/);
    expect(text).toContain('by <b>&lt;script&gt;');
    expect(text).toContain('href="/audit?job=nightly-report"');
    expect(text).not.toContain('<script>');
  });
});
