/**
 * The dashboard's JSON API, pages and /metrics against a real SQLite store and a running scheduler
 * (no token: loopback). The API shapes are a contract (DESIGN.md, "CLI").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Dashboard, startDashboard } from '../src/dashboard/server.js';
import { createScheduler, openStore } from '../src/index.js';
import { encodeHistory } from '../src/scheduler/finish/history.js';
import { keys } from '../src/scheduler/keys.js';
import {
  type Cluster,
  dashboardFor,
  events,
  nextEvent,
  startCluster,
  XSS_ERROR,
  XSS_JOB,
} from './fixtures/dashboard/cluster.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let cluster: Cluster;
let dashboard: Dashboard;

async function get(path: string, init?: RequestInit) {
  const res = await fetch(dashboard.url + path, { redirect: 'manual', ...init });
  const text = await res.text();
  return { res, text, json: () => JSON.parse(text) as unknown };
}

async function post(path: string, init?: RequestInit) {
  return get(path, { method: 'POST', ...init });
}

/** The CSRF token the pages embed in their forms. */
async function csrfOf(path = '/'): Promise<string> {
  const { text } = await get(path);
  const m = /name="csrf" value="([^"]+)"/.exec(text);
  if (!m?.[1]) throw new Error(`no csrf field on ${path}`);
  return m[1];
}

beforeAll(async () => {
  cluster = await startCluster('sqlite');
  dashboard = await dashboardFor(cluster);
  const failed = nextEvent(cluster.scheduler, 'failed', (e) => e.job === XSS_JOB);
  await cluster.scheduler.trigger(XSS_JOB);
  await Promise.all([failed, events(cluster.scheduler, 'succeeded', (e) => e.job === 'tick', 2)]);
}, 60_000);

afterAll(async () => {
  await dashboard?.close();
  await cluster?.close();
});

describe('GET /api/jobs', () => {
  it('lists every recorded job with trigger, paused, next fire times (ISO) and last run', async () => {
    const { res, json } = await get('/api/jobs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const jobs = json() as Array<Record<string, unknown>>;
    expect(jobs.map((j) => j['name']).sort()).toEqual([XSS_JOB, 'nightly-report', 'tick'].sort());
    const tick = jobs.find((j) => j['name'] === 'tick')!;
    expect(tick['trigger']).toEqual({ every: '1s' });
    expect(tick['paused']).toBe(false);
    const next = tick['nextFireTimes'] as string[];
    expect(next.length).toBeGreaterThan(0);
    for (const t of next) expect(t).toMatch(ISO);
    expect(Date.parse(next[0]!) % 1000).toBe(0);
    const last = tick['lastRun'] as Record<string, unknown>;
    // The newest run may be going right now (every 1 s, a millisecond each).
    expect(last).toMatchObject({ job: 'tick', node: 'node-a', source: 'schedule' });
    expect(['succeeded', 'running']).toContain(last['status']);
    expect(last['fireTime']).toMatch(ISO);
    expect(last['startedAt']).toMatch(ISO);
    expect(tick['nodes']).toEqual(['node-a']);
    const report = jobs.find((j) => j['name'] === 'nightly-report')!;
    expect(report['trigger']).toEqual({ cron: '0 3 * * *', timezone: 'Europe/Berlin' });
    expect(report['lastRun']).toBeNull();
  });

  it('carries user data as data: the XSS-named job and its error text come back verbatim', async () => {
    const jobs = (await get('/api/jobs')).json() as Array<Record<string, unknown>>;
    const xss = jobs.find((j) => j['name'] === XSS_JOB)!;
    expect(xss['trigger']).toBeNull();
    expect(xss['lastRun']).toMatchObject({ status: 'failed', source: 'manual' });
    expect((xss['lastRun'] as { error: string }).error).toContain(XSS_ERROR);
  });
});

describe('GET /api/history', () => {
  it('returns a job history newest first, limit honoured', async () => {
    const { res, json } = await get('/api/history?job=tick&limit=2');
    expect(res.status).toBe(200);
    const history = json() as Array<Record<string, string | number>>;
    expect(history).toHaveLength(2);
    expect(history.every((h) => h['job'] === 'tick')).toBe(true);
    expect(Date.parse(history[0]!['fireTime'] as string)).toBeGreaterThan(
      Date.parse(history[1]!['fireTime'] as string),
    );
    expect(history[0]).toMatchObject({ attempt: 1, node: 'node-a' });
    expect(typeof history[0]!['token']).toBe('number');
  });

  it('without job= returns every job, newest first', async () => {
    const history = (await get('/api/history?limit=50')).json() as Array<Record<string, string>>;
    expect(new Set(history.map((h) => h['job']))).toEqual(new Set(['tick', XSS_JOB]));
    const times = history.map((h) => Date.parse(h['fireTime']!));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it.each(['abc', '0', '-1', '1.5', '501', ''])('limit=%j is a 400 with a message', async (limit) => {
    const { res, json } = await get(`/api/history?limit=${limit}`);
    expect(res.status).toBe(400);
    expect(json()).toMatchObject({ statusCode: 400, code: 'INVALID_ARGUMENT' });
    expect((json() as { message: string }).message).toMatch(/limit must be a whole number from 1 to 500/);
  });
});

describe('GET /api/nodes and /api/locks', () => {
  it('lists live nodes with ISO dates', async () => {
    const nodes = (await get('/api/nodes')).json() as Array<Record<string, unknown>>;
    expect(nodes).toHaveLength(1);
    expect(nodes[0]).toMatchObject({ id: 'node-a', pid: process.pid, version: expect.any(String) });
    expect(nodes[0]!['lastSeen']).toMatch(ISO);
    expect(nodes[0]!['startedAt']).toMatch(ISO);
  });

  it('lists leases with key, owner, token and ISO times', async () => {
    const locks = (await get('/api/locks')).json() as Array<Record<string, unknown>>;
    expect(locks.length).toBeGreaterThan(0);
    const claim = locks.find((l) => (l['key'] as string).startsWith('occ|tick|'))!;
    expect(claim).toMatchObject({ owner: 'node-a', kind: 'occurrence', name: 'tick' });
    expect(typeof claim['token']).toBe('number');
    expect(claim['acquiredAt']).toMatch(ISO);
    expect(claim['expiresAt']).toMatch(ISO);
    expect((await get('/api/locks?limit=nope')).res.status).toBe(400);
  });
});

/** What an API client without a dashboard token sends to prove it is no cross-site form (docs/dashboard.md). */
const JSON_POST = { headers: { 'content-type': 'application/json' } };

describe('POST /api/jobs/:name/{trigger,pause,resume}', () => {
  it('pause and resume answer 200 and change the stored state', async () => {
    const paused = await post('/api/jobs/nightly-report/pause', JSON_POST);
    expect(paused.res.status).toBe(200);
    expect(paused.json()).toMatchObject({ ok: true, job: 'nightly-report', paused: true });
    expect((await cluster.scheduler.jobs()).find((j) => j.name === 'nightly-report')!.paused).toBe(true);
    const resumed = await post('/api/jobs/nightly-report/resume', JSON_POST);
    expect(resumed.res.status).toBe(200);
    expect(resumed.json()).toMatchObject({ ok: true, paused: false });
    expect((await cluster.scheduler.jobs()).find((j) => j.name === 'nightly-report')!.paused).toBe(false);
  });

  it('trigger answers 202 and a node runs the job', async () => {
    const ran = nextEvent(cluster.scheduler, 'succeeded', (e) => e.job === 'nightly-report');
    const { res, json } = await post('/api/jobs/nightly-report/trigger', {
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(202);
    expect(json()).toMatchObject({ ok: true, job: 'nightly-report', action: 'trigger' });
    expect((await ran).source).toBe('manual');
    const history = (await get('/api/history?job=nightly-report')).json() as Array<Record<string, string>>;
    expect(history[0]).toMatchObject({ source: 'manual', status: 'succeeded' });
    expect(history[0]!['output']).toMatch(/^report for /);
  });

  it('an unknown job is a 404 JSON error; actions are POST only (405 otherwise)', async () => {
    for (const action of ['trigger', 'pause', 'resume']) {
      const { res, json } = await post(`/api/jobs/no-such-job/${action}`, JSON_POST);
      expect(res.status).toBe(404);
      expect(json()).toMatchObject({ statusCode: 404, code: 'NOT_FOUND' });
      expect((json() as { message: string }).message).toContain('no-such-job');
    }
    const viaGet = await get('/api/jobs/nightly-report/pause');
    expect(viaGet.res.status).toBe(405);
    expect(viaGet.res.headers.get('allow')).toBe('POST');
    expect((await cluster.scheduler.jobs()).find((j) => j.name === 'nightly-report')!.paused).toBe(false);
  });

  it('a POST from another site is refused even without a token', async () => {
    const { res } = await post('/api/jobs/nightly-report/pause', {
      headers: { origin: 'http://evil.example' },
    });
    expect(res.status).toBe(403);
    const fetchSite = await post('/api/jobs/nightly-report/pause', {
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expect(fetchSite.res.status).toBe(403);
    expect((await cluster.scheduler.jobs()).find((j) => j.name === 'nightly-report')!.paused).toBe(false);
  });
});

describe('pages', () => {
  it('/ shows the jobs table with triggers, last status, state, counts, nodes and action buttons', async () => {
    const { res, text } = await get('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(text).toContain('<table class="jobs">');
    expect(text).toContain('data-job="tick"');
    expect(text).toContain('every 1s');
    expect(text).toContain('cron 0 3 * * * (Europe/Berlin)');
    expect(text).toMatch(/class="status s-succeeded"/);
    expect(text).toMatch(/class="status s-failed"/);
    expect(text).toContain('node-a');
    expect(text).toMatch(/data-action="trigger"/);
    expect(text).toMatch(/data-action="pause"/);
    expect(text).toMatch(/<span class="ok">\d+ ✓<\/span>/);
  });

  it('/jobs/:name shows the history as a timeline coloured by status', async () => {
    const { res, text } = await get('/jobs/tick');
    expect(res.status).toBe(200);
    expect(text).toContain('<ol class="timeline">');
    expect(text).toMatch(/<li id="occ-1" class="run s-(succeeded|running)"/);
    expect(text).toMatch(/<li id="occ-\d+" class="run s-succeeded" data-status="succeeded">/);
    expect(text).toContain('source <b>schedule</b>');
    expect(text).toMatch(/<pre class="text output">tick \d+<\/pre>/);
    expect((await get('/jobs/tick?limit=0')).res.status).toBe(400);
    expect((await get('/jobs/no-such-job')).res.status).toBe(404);
  });

  it('/jobs/:name says why a fire time was skipped: the run it overlapped', async () => {
    const fireTime = Date.UTC(2026, 0, 2, 3, 0, 1);
    const occ = { job: 'tick', scheduleId: undefined, fireTime, shard: undefined };
    await cluster.store.put(
      keys.history(occ, 1),
      encodeHistory({
        job: 'tick',
        fireTime: new Date(fireTime),
        node: 'node-b',
        attempt: 1,
        token: 41,
        source: 'schedule',
        status: 'skipped',
        startedAt: new Date(fireTime + 3),
        finishedAt: new Date(fireTime + 3),
        reason: 'overlap',
        by: { fireTime: new Date(fireTime - 1_000), node: 'node-<a>', token: 40 },
      }),
    );
    const { text } = await get(`/jobs/tick?before=${fireTime + 1}&limit=5`);
    expect(text).toContain(
      '<p class="text skip-reason">overlap: the run of 2026-01-02T03:00:00.000Z (on node-&lt;a&gt;, token 40) was still going</p>',
    );
  });

  it('/nodes and /locks list nodes and leases', async () => {
    const nodes = await get('/nodes');
    expect(nodes.res.status).toBe(200);
    expect(nodes.text).toContain('node-a');
    expect(nodes.text).toMatch(/ago<\/td>/);
    const locks = await get('/locks');
    expect(locks.res.status).toBe(200);
    expect(locks.text).toMatch(/<p class="holds">[1-9]\d* done holds? not listed/);
    const holds = await get('/locks?holds=1');
    expect(holds.text).toContain('occ|tick|');
    expect(holds.text).toMatch(/<div class="state ">hold<\/div>/);
  });

  it('escapes user data: the XSS job name and its </script> error never appear raw', async () => {
    for (const path of ['/', `/jobs/${encodeURIComponent(XSS_JOB)}`, '/locks?holds=1']) {
      const { res, text } = await get(path);
      expect(res.status).toBe(200);
      expect(text).not.toContain('<img');
      expect(text).not.toMatch(/<script/i);
      expect(text).not.toMatch(/<\/script/i);
      expect(text).toContain('&lt;img src=x onerror=alert(1)&gt;');
    }
    const page = (await get(`/jobs/${encodeURIComponent(XSS_JOB)}`)).text;
    expect(page).toContain('bad input &lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(page).toMatch(/class="run s-failed"/);
  });

  it('sends the security headers on pages, API, assets and errors', async () => {
    for (const path of ['/', '/api/jobs', '/assets/style.css', '/nope', '/api/history?limit=x']) {
      const { res } = await get(path);
      expect(res.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
      expect(res.headers.get('content-security-policy')).toMatch(/script-src 'none'/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    }
    expect((await get('/nope')).res.status).toBe(404);
  });

  it('a form post needs the CSRF token, then redirects back with a notice', async () => {
    const without = await post('/jobs/nightly-report/pause', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'return=%2F',
    });
    expect(without.res.status).toBe(403);
    expect(without.text).toContain('CSRF');
    const csrf = await csrfOf();
    const ok = await post('/jobs/nightly-report/pause', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, return: '/' }).toString(),
    });
    expect(ok.res.status).toBe(303);
    expect(ok.res.headers.get('location')).toBe('/?done=pause&job=nightly-report');
    expect((await cluster.scheduler.jobs()).find((j) => j.name === 'nightly-report')!.paused).toBe(true);
    const page = await get(ok.res.headers.get('location')!);
    expect(page.text).toContain('Paused <b>nightly-report</b>');
    expect(page.text).toMatch(/data-job="nightly-report"[\s\S]*?state paused[\s\S]*?data-action="resume"/);
    // A return path to another origin is ignored.
    const resumed = await post('/jobs/nightly-report/resume', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, return: '//evil.example/x' }).toString(),
    });
    expect(resumed.res.status).toBe(303);
    expect(resumed.res.headers.get('location')).toBe('/jobs/nightly-report?done=resume&job=nightly-report');
    expect((await cluster.scheduler.jobs()).find((j) => j.name === 'nightly-report')!.paused).toBe(false);
  });
});

describe('/metrics', () => {
  it('exposes run counters with the job label, the lateness histogram and store gauges', async () => {
    const { res, text } = await get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(text).toMatch(/^oncely_runs_total\{job="tick",status="succeeded"\} [1-9]\d*$/m);
    expect(text).toMatch(/^oncely_runs_total\{job="<img src=x onerror=alert\(1\)>",status="failed"\} 1$/m);
    expect(text).toMatch(/^oncely_run_failures_total\{job="<img src=x onerror=alert\(1\)>"\} 1$/m);
    expect(text).toMatch(/^# TYPE oncely_start_lateness_seconds histogram$/m);
    expect(text).toMatch(/^oncely_start_lateness_seconds_bucket\{le="1",job="tick"\} [1-9]\d*$/m);
    expect(text).toMatch(/^oncely_start_lateness_seconds_count\{job="tick"\} [1-9]\d*$/m);
    expect(text).toMatch(/^oncely_lock_acquisitions_total\{job="tick"\} [1-9]\d*$/m);
    expect(text).toMatch(/^oncely_store_errors_total 0$/m);
    expect(text).toMatch(/^oncely_jobs 3$/m);
    expect(text).toMatch(/^oncely_jobs_paused 0$/m);
    expect(text).toMatch(/^oncely_nodes 1$/m);
    expect(text).toMatch(/^oncely_leases_held [1-9]\d*$/m);
    expect(text).toMatch(/^oncely_store_up 1$/m);
  });

  it('without a scheduler in the process: gauges only, and actions still reach the running nodes', async () => {
    const standalone = await startDashboard({ store: cluster.store, port: 0 });
    try {
      const text = await (await fetch(`${standalone.url}/metrics`)).text();
      expect(text).toMatch(/^oncely_jobs 3$/m);
      expect(text).not.toMatch(/^oncely_runs_total\{/m);
      const ran = nextEvent(cluster.scheduler, 'succeeded', (e) => e.job === 'nightly-report');
      const res = await fetch(`${standalone.url}/api/jobs/nightly-report/trigger`, {
        method: 'POST',
        ...JSON_POST,
      });
      expect(res.status).toBe(202);
      expect((await ran).source).toBe('manual');
    } finally {
      await standalone.close();
    }
  });
});

describe('a job no live node defines', () => {
  it('is marked live: false, shows no fire times, and a trigger is refused with 409', async () => {
    const store = await openStore('memory:');
    // `gone` was defined by a node that has stopped since: its record outlives it, nothing runs it.
    const old = createScheduler({ store, node: 'node-old', pollInterval: '250ms' });
    old.define('gone', { every: '1h' }, async () => {});
    await old.start();
    await old.stop();
    const live = createScheduler({ store, node: 'node-live', pollInterval: '250ms' });
    live.define('alive', { every: '1h' }, async () => {});
    await live.start();
    const d = await startDashboard({ store, scheduler: live, port: 0 });
    const at = (path: string, init?: RequestInit) => fetch(d.url + path, { redirect: 'manual', ...init });
    try {
      const jobs = (await (await at('/api/jobs')).json()) as Array<Record<string, unknown>>;
      expect(jobs.find((j) => j['name'] === 'gone')).toMatchObject({ nodes: [], live: false });
      expect(jobs.find((j) => j['name'] === 'alive')).toMatchObject({ nodes: ['node-live'], live: true });

      const refused = await at('/api/jobs/gone/trigger', { method: 'POST', ...JSON_POST });
      expect(refused.status).toBe(409);
      const body = (await refused.json()) as { code: string; message: string };
      expect(body).toMatchObject({ statusCode: 409, code: 'NO_LIVE_NODE', error: 'Conflict' });
      expect(body.message).toContain('no live node defines job "gone"');
      // Nothing was queued for a node that may come much later.
      expect(await store.scan('ctl|trig|', { limit: 10 })).toEqual([]);
      // Pause and resume need no live node; a live job is still triggered.
      expect((await at('/api/jobs/gone/pause', { method: 'POST', ...JSON_POST })).status).toBe(200);
      expect((await at('/api/jobs/gone/resume', { method: 'POST', ...JSON_POST })).status).toBe(200);
      expect((await at('/api/jobs/alive/trigger', { method: 'POST', ...JSON_POST })).status).toBe(202);

      // The pages say so instead of listing fire times, and offer no Trigger now.
      const page = await (await at('/')).text();
      const row = /<tr data-job="gone">[\s\S]*?<\/tr>/.exec(page)?.[0] ?? '';
      expect(row).toContain('not scheduled: no live node defines this job');
      expect(row).not.toContain('<time');
      expect(row).toMatch(/data-action="trigger" disabled title="no live node defines this job/);
      const aliveRow = /<tr data-job="alive">[\s\S]*?<\/tr>/.exec(page)?.[0] ?? '';
      expect(aliveRow).toContain('<time');
      expect(aliveRow).not.toContain('disabled');
      const jobPage = await (await at('/jobs/gone')).text();
      expect(jobPage).toContain('not scheduled: no live node defines this job');
      expect(jobPage).toMatch(/data-action="trigger" disabled/);
      // A form post (a stale page) is refused the same way, as an error page.
      const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
      const form = await at('/jobs/gone/trigger', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf, return: '/' }).toString(),
      });
      expect(form.status).toBe(409);
      expect(await form.text()).toContain('no live node defines job');
    } finally {
      await d.close();
      await live.stop();
      await store.close();
    }
  });
});

describe('when the store fails', () => {
  it('answers 5xx without details, and /metrics reports oncely_store_up 0', async () => {
    const store = await openStore('memory:');
    const errors: unknown[] = [];
    const logger = { debug() {}, info() {}, warn() {}, error: (...args: unknown[]) => errors.push(args) };
    const d = await startDashboard({ store, port: 0, logger });
    try {
      await store.close();
      const api = await fetch(`${d.url}/api/jobs`);
      expect(api.status).toBeGreaterThanOrEqual(500);
      expect(await api.json()).toMatchObject({ statusCode: api.status, message: expect.any(String) });
      const page = await fetch(`${d.url}/`);
      expect(page.status).toBeGreaterThanOrEqual(500);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const metrics = await (await fetch(`${d.url}/metrics`)).text();
      expect(metrics).toMatch(/^oncely_store_up 0$/m);
      expect(errors.length).toBeGreaterThan(0);
    } finally {
      await d.close();
    }
  });
});
