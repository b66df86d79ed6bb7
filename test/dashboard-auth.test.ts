/**
 * Dashboard access rules: loopback unless a token is set; with a token every request needs it
 * (Bearer, or the cookie `?token=` sets); CSRF on form posts; DNS-rebinding Host check.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crossSiteReason, isLoopbackHost, parseCookies, safeEqual } from '../src/dashboard/auth.js';
import { type Dashboard, startDashboard } from '../src/dashboard/server.js';
import { OncelyError } from '../src/index.js';
import { type Cluster, dashboardFor, startCluster } from './fixtures/dashboard/cluster.js';
import { rawRequest } from './fixtures/dashboard/raw-http.js';

const TOKEN = 's3cret-token-for-tests';

let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster('memory:');
}, 30_000);

afterAll(async () => {
  await cluster?.close();
});

describe('binding', () => {
  it.each([
    '0.0.0.0',
    '::',
    '10.1.2.3',
    'example.com',
  ])('refuses %s without a token, naming ONCELY_DASHBOARD_TOKEN', async (host) => {
    const err = await startDashboard({ store: cluster.store, host, port: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OncelyError);
    expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
    expect((err as OncelyError).message).toContain('ONCELY_DASHBOARD_TOKEN');
  });

  it('treats an empty or blank token as no token', async () => {
    for (const token of ['', '   ']) {
      const err = await startDashboard({ store: cluster.store, host: '0.0.0.0', port: 0, token }).catch(
        (e: unknown) => e,
      );
      expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
      expect((err as OncelyError).message).toContain('ONCELY_DASHBOARD_TOKEN');
    }
  });

  it('binds 127.0.0.1 by default and rejects a bad port', async () => {
    const d = await dashboardFor(cluster);
    try {
      expect(d.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${d.url}/api/jobs`)).status).toBe(200);
    } finally {
      await d.close();
    }
    for (const port of [-1, 70_000, 1.5]) {
      const err = await startDashboard({ store: cluster.store, port }).catch((e: unknown) => e);
      expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
    }
  });

  it('knows loopback hosts', () => {
    for (const h of ['127.0.0.1', '127.3.2.1', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1', 'LOCALHOST'])
      expect(isLoopbackHost(h), h).toBe(true);
    for (const h of [
      '0.0.0.0',
      '::',
      '10.0.0.1',
      '128.0.0.1',
      'example.com',
      '127.0.0.1.nip.io',
      '::ffff:10.0.0.1',
    ])
      expect(isLoopbackHost(h), h).toBe(false);
  });
});

describe('with a token', () => {
  let d: Dashboard;
  let base: string;

  beforeAll(async () => {
    d = await dashboardFor(cluster, { host: '0.0.0.0', token: TOKEN });
    base = d.url.replace('0.0.0.0', '127.0.0.1');
  });
  afterAll(async () => {
    await d?.close();
  });

  const go = (path: string, init: RequestInit = {}) => fetch(base + path, { redirect: 'manual', ...init });

  it('answers 401 without a token or with a wrong one, everywhere', async () => {
    // Each path from its own source address: wrong tokens are throttled per address (10 a minute).
    const paths = [
      '/',
      '/jobs/tick',
      '/nodes',
      '/locks',
      '/api/jobs',
      '/metrics',
      '/assets/style.css',
      '/nope',
    ];
    for (const [i, path] of paths.entries()) {
      const from = `127.0.0.${10 + i}`;
      const status = async (headers: Record<string, string> = {}) =>
        (await rawRequest(base, path, { headers, from })).status;
      const none = await rawRequest(base, path, { from });
      expect(none.status, path).toBe(401);
      expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
      expect(await status({ authorization: 'Bearer wrong' }), path).toBe(401);
      expect(await status({ authorization: `Bearer ${TOKEN}x` }), path).toBe(401);
      expect(await status({ authorization: `Basic ${TOKEN}` }), path).toBe(401);
      expect(await status({ cookie: 'oncely_session=forged' }), path).toBe(401);
    }
    const body = (await (await go('/api/jobs')).json()) as { code: string; message: string };
    expect(body.code).toBe('UNAUTHORIZED');
    expect((await go('/api/jobs/tick/pause', { method: 'POST' })).status).toBe(401);
    expect((await go(`/?token=wrong`)).status).toBe(401);
  });

  it('serves pages, API and metrics to the right Bearer token', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const path of ['/', '/jobs/tick', '/nodes', '/locks', '/api/jobs', '/metrics', '/assets/style.css'])
      expect((await go(path, { headers: auth })).status, path).toBe(200);
  });

  it('swaps ?token= for an HttpOnly SameSite=Strict cookie and a redirect without it; the cookie works', async () => {
    const res = await go(`/jobs/tick?limit=5&token=${encodeURIComponent(TOKEN)}`);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/jobs/tick?limit=5');
    const [setCookie] = res.headers.getSetCookie();
    expect(setCookie).toMatch(/^oncely_session=[^;]+; Path=\/; HttpOnly; SameSite=Strict/);
    expect(setCookie).not.toContain(TOKEN);
    const cookie = setCookie!.split(';')[0]!;
    const page = await go('/jobs/tick?limit=5', { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<h1>tick</h1>');
    expect((await go('/api/jobs', { headers: { cookie } })).status).toBe(200);
  });

  it('form posts need the CSRF token (403 without), also with a valid cookie', async () => {
    const setCookie = (await go(`/?token=${TOKEN}`)).headers.getSetCookie()[0]!;
    const cookie = setCookie.split(';')[0]!;
    const form = { cookie, 'content-type': 'application/x-www-form-urlencoded' };
    const without = await go('/jobs/tick/pause', { method: 'POST', headers: form, body: 'return=%2F' });
    expect(without.status).toBe(403);
    const wrong = await go('/jobs/tick/pause', { method: 'POST', headers: form, body: 'csrf=nope' });
    expect(wrong.status).toBe(403);
    expect((await cluster.scheduler.jobs()).find((j) => j.name === 'tick')!.paused).toBe(false);

    const html = await (await go('/', { headers: { cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)![1]!;
    const crossSite = await go('/jobs/tick/pause', {
      method: 'POST',
      headers: { ...form, origin: 'http://evil.example' },
      body: `csrf=${csrf}`,
    });
    expect(crossSite.status).toBe(403);
    const ok = await go('/jobs/tick/pause', {
      method: 'POST',
      headers: { ...form, origin: base, 'sec-fetch-site': 'same-origin' },
      body: `csrf=${csrf}&return=%2F`,
    });
    expect(ok.status).toBe(303);
    expect((await cluster.scheduler.jobs()).find((j) => j.name === 'tick')!.paused).toBe(true);

    // The API: a cookie-authenticated POST needs the token too (header or field); Bearer does not.
    expect((await go('/api/jobs/tick/resume', { method: 'POST', headers: { cookie } })).status).toBe(403);
    const viaHeader = await go('/api/jobs/tick/resume', {
      method: 'POST',
      headers: { cookie, 'x-csrf-token': csrf },
    });
    expect(viaHeader.status).toBe(200);
    const bearer = await go('/api/jobs/tick/pause', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(bearer.status).toBe(200);
    const resumed = await go('/api/jobs/tick/resume', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(resumed.status).toBe(200);
    expect((await cluster.scheduler.jobs()).find((j) => j.name === 'tick')!.paused).toBe(false);
  });
});

describe('without a token', () => {
  it('refuses a non-loopback Host header (DNS rebinding)', async () => {
    const d = await dashboardFor(cluster);
    try {
      const { port } = new URL(d.url);
      const status = (host: string) =>
        new Promise<number>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port, path: '/api/jobs', headers: { host } }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          req.end();
        });
      expect(await status(`evil.example:${port}`)).toBe(403);
      expect(await status(`localhost:${port}`)).toBe(200);
      expect(await status(`127.0.0.1:${port}`)).toBe(200);
    } finally {
      await d.close();
    }
  });
});

describe('helpers', () => {
  it('compares in constant time whatever the lengths', () => {
    expect(safeEqual('a', 'a')).toBe(true);
    expect(safeEqual('a', 'ab')).toBe(false);
    expect(safeEqual('', 'x'.repeat(1000))).toBe(false);
  });

  it('parses cookies and judges Origin/Referer/Sec-Fetch-Site', () => {
    expect(parseCookies('a=1; oncely_session=xyz; a=2').get('oncely_session')).toBe('xyz');
    const host = '127.0.0.1:8080';
    expect(crossSiteReason({ host })).toBeUndefined();
    expect(crossSiteReason({ host, origin: 'http://127.0.0.1:8080' })).toBeUndefined();
    expect(crossSiteReason({ host, origin: 'null', secFetchSite: 'same-origin' })).toBeUndefined();
    expect(crossSiteReason({ host, origin: 'http://evil.example' })).toMatch(/Origin/);
    expect(crossSiteReason({ host, referer: 'http://evil.example/x' })).toMatch(/Referer/);
    expect(crossSiteReason({ host, referer: 'http://127.0.0.1:8080/jobs/x' })).toBeUndefined();
    expect(crossSiteReason({ host, secFetchSite: 'same-site' })).toMatch(/Sec-Fetch-Site/);
  });
});
