/**
 * Stored schedules on the dashboard: `/api/schedules` pages by id with a `Link` to the next page
 * and a capped limit, `/api/schedules/count`, the job page's "Stored schedules" section (escaped
 * ids, a next-page link that carries any id), and the token rule on the new routes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dashboard } from '../src/dashboard/server.js';
import { type Cluster, dashboardFor, startCluster } from './fixtures/dashboard/cluster.js';

const TOKEN = 'schedules-test-token-0123456789';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** Sorts after every `user-…` id; must come back escaped in HTML and intact through links. */
const XSS_ID = `zz<script>alert("x")</script>&"q" #?%`;
const JOB = 'nightly-report';

let cluster: Cluster;
let dashboard: Dashboard;

async function get(path: string, init?: RequestInit) {
  const res = await fetch(dashboard.url + path, { redirect: 'manual', ...init });
  const text = await res.text();
  return { res, text, json: () => JSON.parse(text) as unknown };
}

beforeAll(async () => {
  cluster = await startCluster('memory:');
  // 03:00 in Berlin: nothing fires during the test.
  await cluster.scheduler.schedules.upsert([
    ...Array.from({ length: 120 }, (_, i) => ({
      id: `user-${String(i).padStart(3, '0')}`,
      job: JOB,
      cron: '0 3 * * *',
      timezone: 'Europe/Berlin',
      data: { user: i },
    })),
    { id: XSS_ID, job: JOB, cron: '0 3 1 1 *', data: { note: '<b>bold</b>' } },
    { id: 'other-1', job: 'tick', every: '1d' },
  ]);
  dashboard = await dashboardFor(cluster);
}, 30_000);

afterAll(async () => {
  await dashboard?.close();
  await cluster?.close();
});

describe('GET /api/schedules', () => {
  it('pages by id with a Link to exactly the next page: every schedule once', async () => {
    const seen: string[] = [];
    let path: string | undefined = `/api/schedules?job=${JOB}&limit=50`;
    let pages = 0;
    while (path) {
      const { res, json } = await get(path);
      expect(res.status).toBe(200);
      const rows = json() as Array<{ id: string }>;
      seen.push(...rows.map((r) => r.id));
      const link = res.headers.get('link');
      path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
      expect(++pages).toBeLessThan(10);
    }
    expect(seen).toHaveLength(121);
    expect(new Set(seen).size).toBe(121);
    expect(seen.at(-1)).toBe(XSS_ID);
  });

  it('answers { id, job, trigger, timezone?, nextFireTime, data }', async () => {
    const { json } = await get(`/api/schedules?job=${JOB}&limit=1`);
    const [first] = json() as Array<Record<string, unknown>>;
    expect(first).toEqual({
      id: 'user-000',
      job: JOB,
      trigger: { cron: '0 3 * * *' },
      timezone: 'Europe/Berlin',
      nextFireTime: expect.stringMatching(ISO),
      data: { user: 0 },
    });
    const all = (await get('/api/schedules')).json() as Array<{ id: string; job: string }>;
    expect(all.find((s) => s.id === 'other-1')).toMatchObject({
      job: 'tick',
      trigger: { every: '1d' },
      data: null,
    });
    const after = (await get(`/api/schedules?after=${encodeURIComponent('user-119')}`)).json() as Array<{
      id: string;
    }>;
    expect(after.map((s) => s.id)).toEqual([XSS_ID]);
  });

  it('caps limit at 500 with a 400 naming the maximum; a bad cursor is a 400', async () => {
    const big = await get('/api/schedules?limit=501');
    expect(big.res.status).toBe(400);
    expect((big.json() as { message: string }).message).toContain('from 1 to 500');
    expect((await get('/api/schedules?limit=500')).res.status).toBe(200);
    expect((await get(`/api/schedules?after=${encodeURIComponent('a\u0001b')}`)).res.status).toBe(400);
  });

  it('/api/schedules/count counts all or one job', async () => {
    expect((await get('/api/schedules/count')).json()).toEqual({ count: 122 });
    expect((await get(`/api/schedules/count?job=${JOB}`)).json()).toEqual({ count: 121, job: JOB });
  });
});

describe('the job page', () => {
  it('shows a "Stored schedules" section: 50 per page, ids and data escaped', async () => {
    const { res, text } = await get(`/jobs/${JOB}`);
    expect(res.status).toBe(200);
    expect(text).toContain('<h2 id="schedules">Stored schedules');
    expect(text).toContain('121 in all');
    expect(text.match(/<tr data-schedule=/g)).toHaveLength(50);
    expect(text).toContain('<td class="mono">user-000</td>');
    expect(text).not.toContain('user-050');
  });

  it('follows "Next schedules" to the last page, whose XSS-like id is escaped, never markup', async () => {
    let path = `/jobs/${JOB}`;
    let text = '';
    for (let page = 0; page < 3; page++) {
      text = (await get(path)).text;
      const m = /<a href="([^"]+)" data-page="next-schedules">/.exec(text);
      if (!m) break;
      path = m[1]!.replaceAll('&amp;', '&');
      expect(path).toMatch(/^\/jobs\/nightly-report\?after=user-\d{3}#schedules$/);
    }
    expect(text).toContain('21 after');
    expect(text.match(/<tr data-schedule=/g)).toHaveLength(21);
    expect(text).toContain('zz&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&quot;q&quot; #?%');
    expect(text).not.toContain('<script>');
    expect(text).toContain('&lt;b&gt;bold&lt;/b&gt;');
    expect(text).not.toContain('data-page="next-schedules"');
    expect(text).toContain('data-page="first"');
  });

  it('builds the next-page link safely for any id: the cursor comes back exactly', async () => {
    // user-071 … user-119 and XSS_ID: a full page of 50 whose last id is the XSS-like one.
    const { text } = await get(`/jobs/${JOB}?after=user-070`);
    expect(text.match(/<tr data-schedule=/g)).toHaveLength(50);
    const m = /<a href="([^"]+)" data-page="next-schedules">/.exec(text);
    expect(m).not.toBeNull();
    const href = m![1]!;
    expect(href).not.toMatch(/[<>"'\s]/);
    const decoded = href.replaceAll('&amp;', '&');
    const url = new URL(decoded, 'http://x');
    expect(url.pathname).toBe(`/jobs/${JOB}`);
    expect(url.searchParams.get('after')).toBe(XSS_ID);
    expect(url.hash).toBe('#schedules');
    const next = await get(`${url.pathname}${url.search}`);
    expect(next.res.status).toBe(200);
    expect(next.text).toContain('No stored schedules after this one.');
    expect(next.text).toContain('<a href="/jobs/nightly-report#schedules" data-page="first">');
  });

  it('a job without stored schedules has no such section', async () => {
    const { text } = await get(`/jobs/${encodeURIComponent('<img src=x onerror=alert(1)>')}`);
    expect(text).not.toContain('Stored schedules');
  });

  it('the jobs table shows the count', async () => {
    const { text } = await get('/');
    expect(text).toContain('+ 121 stored schedules');
    expect(text).toContain('+ 1 stored schedule<');
  });
});

describe('with a token', () => {
  it('the schedule routes answer 401 without it, and 200 with it', async () => {
    const d = await dashboardFor(cluster, { token: TOKEN });
    try {
      for (const path of ['/api/schedules', '/api/schedules/count', `/jobs/${JOB}?after=user-001`]) {
        const res = await fetch(d.url + path, { redirect: 'manual' });
        expect(res.status, path).toBe(401);
        const ok = await fetch(d.url + path, { headers: { authorization: `Bearer ${TOKEN}` } });
        expect(ok.status, path).toBe(200);
      }
    } finally {
      await d.close();
    }
  });
});

describe('a paused stored schedule (docs/pause.md)', () => {
  it('shows paused, since when, by whom and the note (escaped) on the job page and in /api/schedules', async () => {
    await cluster.scheduler.schedules.pause('user-001', { note: '<b>on holiday</b>', actor: 'alice' });
    try {
      const rows = (await get(`/api/schedules?job=${JOB}&limit=3`)).json() as Array<{
        id: string;
        pause?: { since: string; actor?: string; note?: string };
      }>;
      expect(rows.map((r) => r.pause?.note)).toEqual([undefined, '<b>on holiday</b>', undefined]);
      expect(rows[1]!.pause).toMatchObject({ since: expect.stringMatching(ISO), actor: 'alice' });
      const one = (await get('/api/schedule?id=user-001')).json() as { pause?: { actor?: string } };
      expect(one.pause?.actor).toBe('alice');
      const { text } = await get(`/jobs/${JOB}`);
      const row = /<tr data-schedule="user-001">[\s\S]*?<\/tr>/.exec(text)![0];
      expect(row).toContain('<span class="state paused"');
      expect(row).toContain('by alice: &lt;b&gt;on holiday&lt;/b&gt;');
      expect(row).not.toContain('<b>');
    } finally {
      await cluster.scheduler.schedules.resume('user-001');
    }
    expect((await get(`/jobs/${JOB}`)).text).not.toContain('class="state paused"');
  });
});
