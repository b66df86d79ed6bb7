/**
 * The findings of the dashboard's security review, one block each (docs/dashboard.md, "Security"):
 * CSRF without a token, open redirects, weak tokens, wrong-token throttling, bounded and paged
 * history, random server-side sessions, strict Host parsing.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostOfHeader, isLoopbackHost } from '../src/dashboard/auth.js';
import { type Dashboard, startDashboard } from '../src/dashboard/server.js';
import { Sessions } from '../src/dashboard/sessions.js';
import { FailureThrottle } from '../src/dashboard/throttle.js';
import { type HistoryEntry, OncelyError, openStore, type Store, type WriteOp } from '../src/index.js';
import { encodeHistory } from '../src/scheduler/finish/history.js';
import { keys } from '../src/scheduler/keys.js';
import { type Cluster, dashboardFor, startCluster } from './fixtures/dashboard/cluster.js';
import { rawRequest } from './fixtures/dashboard/raw-http.js';

const TOKEN = 'security-test-token-0123456789';

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster('memory:');
}, 30_000);
afterAll(async () => {
  await cluster?.close();
});

const isPaused = async (job: string) => (await cluster.scheduler.jobs()).find((j) => j.name === job)!.paused;

async function csrfOf(base: string, init: RequestInit = {}): Promise<string> {
  const text = await (await fetch(`${base}/`, init)).text();
  return /name="csrf" value="([^"]+)"/.exec(text)![1]!;
}

async function withDashboard<T>(
  options: Parameters<typeof dashboardFor>[1],
  fn: (d: Dashboard) => Promise<T>,
): Promise<T> {
  const d = await dashboardFor(cluster, options);
  try {
    return await fn(d);
  } finally {
    await d.close();
  }
}

describe('CSRF without a token (loopback)', () => {
  let d: Dashboard;
  beforeAll(async () => {
    d = await dashboardFor(cluster);
  });
  afterAll(async () => {
    await d?.close();
  });
  const post = (path: string, headers: Record<string, string>, body?: string) =>
    fetch(d.url + path, { method: 'POST', redirect: 'manual', headers, ...(body !== undefined && { body }) });

  it('refuses an API POST with Origin: null and a text/plain body (a sandboxed cross-site page)', async () => {
    const res = await post(
      '/api/jobs/nightly-report/pause',
      { origin: 'null', 'content-type': 'text/plain' },
      'x',
    );
    expect(res.status).toBe(403);
    expect(await isPaused('nightly-report')).toBe(false);
  });

  it('refuses an API POST with no proof at all, and says what to send', async () => {
    const res = await post('/api/jobs/nightly-report/pause', {});
    expect(res.status).toBe(403);
    expect(((await res.json()) as { message: string }).message).toContain('Content-Type: application/json');
    // 415 for a type no parser takes: refused before the CSRF rules are even asked.
    for (const type of [
      'text/plain; application/json',
      'application/x-www-form-urlencoded',
      'application/jsonx',
    ])
      expect([403, 415], type).toContain(
        (await post('/api/jobs/nightly-report/pause', { 'content-type': type }, '')).status,
      );
    expect(await isPaused('nightly-report')).toBe(false);
  });

  it('accepts an API POST with Content-Type: application/json (needs a CORS preflight cross-site) or the CSRF header', async () => {
    const json = await post('/api/jobs/nightly-report/pause', {
      'content-type': 'application/json; charset=utf-8',
    });
    expect(json.status).toBe(200);
    expect(await isPaused('nightly-report')).toBe(true);
    const viaHeader = await post('/api/jobs/nightly-report/resume', { 'x-csrf-token': await csrfOf(d.url) });
    expect(viaHeader.status).toBe(200);
    expect(await isPaused('nightly-report')).toBe(false);
    // JSON is no excuse for a request a browser marks cross-site.
    const cross = await post('/api/jobs/nightly-report/pause', {
      'content-type': 'application/json',
      origin: 'http://evil.example',
    });
    expect(cross.status).toBe(403);
  });

  it('a form post always needs the csrf field, JSON or not, Origin: null or not', async () => {
    for (const headers of [
      { 'content-type': 'application/json' },
      { 'content-type': 'application/x-www-form-urlencoded', origin: 'null' },
    ])
      expect(
        (
          await post(
            '/jobs/nightly-report/pause',
            headers,
            headers['content-type'].endsWith('json') ? '{}' : 'return=%2F',
          )
        ).status,
      ).toBe(403);
    const csrf = await csrfOf(d.url);
    const ok = await post(
      '/jobs/nightly-report/pause',
      { 'content-type': 'application/x-www-form-urlencoded', origin: 'null' },
      new URLSearchParams({ csrf }).toString(),
    );
    expect(ok.status).toBe(303);
    expect(await isPaused('nightly-report')).toBe(true);
    await cluster.scheduler.resume('nightly-report');
  });

  it('with a token, a cookie-authenticated API POST still needs the CSRF token, JSON or not', async () => {
    await withDashboard({ token: TOKEN }, async (t) => {
      const login = await fetch(`${t.url}/?token=${TOKEN}`, { redirect: 'manual' });
      const cookie = login.headers.getSetCookie()[0]!.split(';')[0]!;
      const res = await fetch(`${t.url}/api/jobs/nightly-report/pause`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json' },
      });
      expect(res.status).toBe(403);
      expect(await isPaused('nightly-report')).toBe(false);
    });
  });
});

describe('open redirects', () => {
  const isLocal = (location: string) =>
    location.startsWith('/') &&
    !/^\/[/\\]/.test(location) &&
    new URL(location, 'http://127.0.0.1:9').host === '127.0.0.1:9';

  it.each([
    '/.//evil.com',
    '//evil.com',
    '/\\evil.com',
    '/%5Cevil.com',
    '/%5cevil.com',
    '/%2e//evil.com',
    '/%2F%2Fevil.com',
    'https://evil.com',
    'http:/evil.com',
    '/\t/evil.com',
    '/\n/evil.com',
    '/\r\n/evil.com',
    ' //evil.com',
    '/jobs/../..//evil.com',
  ])('a form return=%j comes back to the job page', async (back) => {
    await withDashboard({}, async (d) => {
      const csrf = await csrfOf(d.url);
      const res = await fetch(`${d.url}/jobs/nightly-report/resume`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf, return: back }).toString(),
      });
      expect(res.status).toBe(303);
      const location = res.headers.get('location')!;
      expect(location).toBe('/jobs/nightly-report?done=resume&job=nightly-report');
      expect(isLocal(location)).toBe(true);
    });
  });

  it('a local return path is kept, normalised', async () => {
    await withDashboard({}, async (d) => {
      const csrf = await csrfOf(d.url);
      const res = await fetch(`${d.url}/jobs/nightly-report/resume`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf, return: '/jobs/./tick?refresh=5' }).toString(),
      });
      expect(res.headers.get('location')).toBe('/jobs/tick?refresh=5&done=resume&job=nightly-report');
    });
  });

  it.each([
    '/%2e//evil.com',
    '/.//evil.com',
    '//evil.com',
    '/\\evil.com',
    '/%5Cevil.com',
    '/%2F%2Fevil.com',
  ])('GET %s?token=<valid> redirects to a local path', async (path) => {
    await withDashboard({ token: TOKEN }, async (d) => {
      const res = await rawRequest(d.url, `${path}?token=${TOKEN}`);
      expect(res.status).toBe(303);
      const location = res.headers['location'] as string;
      expect(isLocal(location), location).toBe(true);
      expect(location).toBe('/');
    });
  });

  it('GET /jobs/tick?limit=5&token=<valid> still comes back to that page without the token', async () => {
    await withDashboard({ token: TOKEN }, async (d) => {
      const res = await rawRequest(d.url, `/jobs/tick?limit=5&token=${TOKEN}`);
      expect(res.headers['location']).toBe('/jobs/tick?limit=5');
    });
  });
});

describe('weak tokens', () => {
  it.each([
    ['0.0.0.0', 'x'],
    ['0.0.0.0', '123456789012345'],
    ['127.0.0.1', 'short-token'],
    ['0.0.0.0', `  ${'a'.repeat(15)}  `],
  ])('on %s, a token of fewer than 16 characters (%j) is refused, naming ONCELY_DASHBOARD_TOKEN', async (host, token) => {
    const err = await startDashboard({ store: cluster.store, host, port: 0, token }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OncelyError);
    expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
    expect((err as OncelyError).message).toContain('ONCELY_DASHBOARD_TOKEN');
    expect((err as OncelyError).message).toContain('16');
    expect((err as OncelyError).message).not.toContain(token.trim());
  });

  it('accepts 16 characters', async () => {
    const d = await startDashboard({ store: cluster.store, host: '0.0.0.0', port: 0, token: 'a'.repeat(16) });
    await d.close();
  });
});

describe('wrong-token throttle', () => {
  it('after 10 wrong tokens an address gets 429 with Retry-After; other addresses and live sessions are not affected', async () => {
    await withDashboard({ token: TOKEN }, async (d) => {
      const from = '127.0.0.31';
      const login = await rawRequest(d.url, `/?token=${TOKEN}`, { from });
      const cookie = (login.headers['set-cookie'] as string[])[0]!.split(';')[0]!;
      // Successes never count.
      for (let i = 0; i < 20; i++)
        expect(
          (await rawRequest(d.url, '/api/jobs', { from, headers: { authorization: `Bearer ${TOKEN}` } }))
            .status,
        ).toBe(200);
      for (let i = 0; i < 10; i++) {
        const wrong = i % 2 === 0 ? { headers: { authorization: 'Bearer nope' } } : {};
        const path = i % 2 === 0 ? '/api/jobs' : '/?token=nope';
        expect((await rawRequest(d.url, path, { from, ...wrong })).status, `attempt ${i + 1}`).toBe(401);
      }
      const blocked = await rawRequest(d.url, '/api/jobs', {
        from,
        headers: { authorization: 'Bearer nope' },
      });
      expect(blocked.status).toBe(429);
      const retryAfter = Number(blocked.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(300);
      expect(JSON.parse(blocked.text)).toMatchObject({ statusCode: 429, code: 'TOO_MANY_REQUESTS' });
      // Cooling down, even the right token is not checked (the answer must not tell).
      expect(
        (await rawRequest(d.url, '/api/jobs', { from, headers: { authorization: `Bearer ${TOKEN}` } }))
          .status,
      ).toBe(429);
      expect((await rawRequest(d.url, `/?token=${TOKEN}`, { from })).status).toBe(429);
      // A browser already logged in keeps working; another address is not throttled.
      expect((await rawRequest(d.url, '/api/jobs', { from, headers: { cookie } })).status).toBe(200);
      expect(
        (
          await rawRequest(d.url, '/api/jobs', {
            from: '127.0.0.32',
            headers: { authorization: `Bearer ${TOKEN}` },
          })
        ).status,
      ).toBe(200);
    });
  });

  it('counts failures in a window, cools down, forgets, and tracks a bounded number of addresses', () => {
    let now = 0;
    const t = new FailureThrottle(
      { maxFailures: 3, windowMs: 1000, coolDownMs: 5000, maxTracked: 4 },
      () => now,
    );
    t.fail('a');
    t.fail('a');
    now = 1000; // the window restarts
    t.fail('a');
    t.fail('a');
    expect(t.retryAfterMs('a')).toBe(0);
    t.fail('a');
    expect(t.retryAfterMs('a')).toBe(5000);
    now = 5999;
    expect(t.retryAfterMs('a')).toBe(1);
    now = 6000;
    expect(t.retryAfterMs('a')).toBe(0);
    t.fail('a');
    expect(t.retryAfterMs('a')).toBe(0);
    for (const c of ['b', 'c', 'd', 'e', 'f']) t.fail(c);
    expect(t.size).toBe(4);
  });
});

describe('history: bounded and paged', () => {
  let store: Store;
  let d: Dashboard;
  const JOBS = ['alpha', 'beta', 'gamma'];
  const T0 = Date.UTC(2024, 4, 1);

  beforeAll(async () => {
    store = await openStore('memory:');
    const ops: WriteOp[] = [];
    for (const [j, job] of JOBS.entries()) {
      ops.push({
        op: 'put',
        key: keys.job(job),
        value: JSON.stringify({ name: job, trigger: null, options: {}, definedBy: 'n', updatedAt: T0 }),
      });
      for (let i = 0; i < 40; i++) {
        const e: HistoryEntry = {
          job,
          fireTime: new Date(T0 - i * 60_000 - (i % 4 === 0 ? 0 : j)),
          node: 'n',
          attempt: 1,
          token: i,
          source: 'schedule',
          status: 'succeeded',
          startedAt: new Date(T0),
        };
        const occ = { job, scheduleId: undefined, fireTime: e.fireTime.getTime(), shard: undefined };
        ops.push({ op: 'put', key: keys.history(occ, 1), value: encodeHistory(e) });
      }
    }
    await store.apply(ops);
    d = await startDashboard({ store, port: 0 });
  });
  afterAll(async () => {
    await d?.close();
    await store?.close();
  });

  type Json = { job: string; fireTime: string };
  const get = async (path: string) => {
    const res = await fetch(d.url + path);
    return { res, body: (await res.json()) as Json[] & { message?: string } };
  };

  it('caps limit at 500 (a larger one is a 400 naming the maximum)', async () => {
    const { res, body } = await get('/api/history?limit=501');
    expect(res.status).toBe(400);
    expect(body.message).toContain('from 1 to 500');
    expect((await get('/api/history?limit=500')).res.status).toBe(200);
    expect((await fetch(`${d.url}/jobs/alpha?limit=501`)).status).toBe(400);
  });

  it('pages with the Link rel="next" cursor: disjoint, consecutive, newest first, everything once', async () => {
    const all = (await get('/api/history?limit=500')).body;
    expect(all).toHaveLength(120);
    const seen: Json[] = [];
    let next: string | undefined = '/api/history?limit=7';
    let pages = 0;
    while (next !== undefined && pages++ < 50) {
      const { res, body } = await get(next);
      expect(res.status).toBe(200);
      seen.push(...body);
      const link = res.headers.get('link');
      next = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
      if (body.length < 7) expect(link).toBeNull();
    }
    expect(seen.map((e) => `${e.job} ${e.fireTime}`)).toEqual(all.map((e) => `${e.job} ${e.fireTime}`));
    const times = seen.map((e) => Date.parse(e.fireTime));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('before= takes an ISO time or epoch ms (strictly older fire times); a bad one is a 400', async () => {
    const cut = new Date(T0 - 10 * 60_000);
    for (const before of [cut.toISOString(), String(cut.getTime())]) {
      const { body } = await get(`/api/history?job=beta&limit=3&before=${encodeURIComponent(before)}`);
      expect(body.map((e) => Date.parse(e.fireTime))).toEqual([
        T0 - 10 * 60_000 - 1,
        T0 - 11 * 60_000 - 1,
        T0 - 12 * 60_000,
      ]);
    }
    for (const bad of ['2024-13-45T00:00:00Z', 'nope', 'aGlzdHx4fDF8fHww'])
      expect((await get(`/api/history?before=${bad}`)).res.status, bad).toBe(400);
  });

  it('the job page links to older runs, and back to the newest', async () => {
    const first = await (await fetch(`${d.url}/jobs/alpha?limit=5`)).text();
    const older = /<a href="([^"]+)" data-page="older">/.exec(first)![1]!.replace(/&amp;/g, '&');
    expect(first).not.toContain('data-page="newest"');
    const second = await (await fetch(d.url + older)).text();
    expect(second).toContain(new Date(T0 - 5 * 60_000).toISOString().replace('T', ' '));
    expect(second).not.toContain(`${new Date(T0 - 4 * 60_000).toISOString().replace('T', ' ')}`);
    expect(second).toContain('data-page="newest"');
  });
});

describe('sessions', () => {
  it('each login opens a new random session that no other dashboard process accepts', async () => {
    await withDashboard({ token: TOKEN }, async (d) => {
      const cookies = await Promise.all(
        [1, 2].map(
          async () =>
            (await fetch(`${d.url}/?token=${TOKEN}`, { redirect: 'manual' })).headers.getSetCookie()[0]!,
        ),
      );
      const [a, b] = cookies.map((c) => c.split(';')[0]!);
      expect(a).not.toBe(b);
      for (const c of cookies)
        expect(c).toMatch(/^oncely_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict/);
      expect((await fetch(`${d.url}/api/jobs`, { headers: { cookie: a! } })).status).toBe(200);
      // Another process (or this one restarted) with the same token: the session is unknown there.
      await withDashboard({ token: TOKEN }, async (other) => {
        expect((await fetch(`${other.url}/api/jobs`, { headers: { cookie: a! } })).status).toBe(401);
      });
    });
  });

  it('sets Secure for a browser on this machine and behind a proxy saying https, not when the proxy says http', async () => {
    await withDashboard({ token: TOKEN }, async (d) => {
      const cookie = async (headers: Record<string, string>) =>
        (
          (await rawRequest(d.url, `/?token=${TOKEN}`, { headers, from: '127.0.0.41' })).headers[
            'set-cookie'
          ] as string[]
        )[0]!;
      expect(await cookie({})).toMatch(/; Secure$/);
      expect(await cookie({ 'x-forwarded-proto': 'https' })).toMatch(/; Secure$/);
      expect(await cookie({ 'x-forwarded-proto': 'http' })).not.toContain('Secure');
    });
  });

  it('expire when idle (sliding) and at their maximum age; the oldest give way at the cap', () => {
    let now = 0;
    const s = new Sessions({ idleMs: 100, maxAgeMs: 250, max: 3 }, () => now);
    const a = s.create();
    now = 99;
    expect(s.touch(a)).toBe(true);
    now = 198;
    expect(s.touch(a)).toBe(true); // slid
    now = 250;
    expect(s.touch(a)).toBe(false); // max age
    const b = s.create();
    now = 350;
    expect(s.touch(b)).toBe(false); // idle
    expect(s.touch('forged')).toBe(false);
    expect(s.touch(undefined)).toBe(false);
    const ids = [s.create(), s.create(), s.create(), s.create()];
    expect(s.size).toBe(3);
    expect(s.touch(ids[0])).toBe(false);
    expect(s.touch(ids[3])).toBe(true);
  });
});

describe('Host header (no token: loopback names only)', () => {
  let d: Dashboard;
  beforeAll(async () => {
    d = await dashboardFor(cluster);
  });
  afterAll(async () => {
    await d?.close();
  });

  it('refuses anything but an exact loopback host[:port]', async () => {
    const port = new URL(d.url).port;
    const status = async (host: string) =>
      (await rawRequest(d.url, '/api/jobs', { headers: { host } })).status;
    for (const host of [
      `127.0.0.1:${port}@evil.com`,
      '127.0.0.1:8097@evil.com',
      'evil.com#@127.0.0.1',
      `evil.com:${port}#@127.0.0.1`,
      '127.0.0.1.evil.com',
      'localhost.',
      `localhost.:${port}`,
      'localhost.evil.com',
      '127.1',
      `127.0.0.1:${port}/x`,
      `127.0.0.1:${port}?x`,
      'user@localhost',
      '[::ffff:127.0.0.1]',
      'local%68ost',
      '127.0.0.1 evil.com',
    ])
      expect(await status(host), host).toBe(403);
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `LOCALHOST:${port}`,
      '[::1]:80',
      '[::1]',
      'localhost',
      'localhost:80',
      'app.localhost',
    ])
      expect(await status(host), host).toBe(200);
  });

  it('parses Host headers strictly', () => {
    expect(hostOfHeader('127.0.0.1:8097@evil.com')).toBeUndefined();
    expect(hostOfHeader('evil.com#@127.0.0.1')).toBeUndefined();
    expect(hostOfHeader('')).toBeUndefined();
    expect(hostOfHeader(undefined)).toBeUndefined();
    expect(hostOfHeader('[::1]:80')).toBe('[::1]');
    expect(hostOfHeader('Example.COM:8080')).toBe('example.com');
    expect(isLoopbackHost(hostOfHeader('127.0.0.1.evil.com')!)).toBe(false);
    expect(isLoopbackHost(hostOfHeader('localhost.')!)).toBe(false);
  });
});

describe('slow and idle clients (issue 29, finding 2)', () => {
  /** A raw socket to the dashboard: what it received, and when (ms after connecting) it was closed. */
  async function slowClient(base: string, head: string, trickle: { every: number; times: number }) {
    const { hostname, port } = new URL(base);
    const socket = connect(Number(port), hostname);
    const t0 = performance.now();
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
    });
    socket.on('error', () => {});
    const closed = new Promise<number>((resolve) =>
      socket.on('close', () => resolve(performance.now() - t0)),
    );
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(head);
    let sent = 0;
    const timer = setInterval(() => {
      if (socket.destroyed || sent++ >= trickle.times) return clearInterval(timer);
      socket.write('x');
    }, trickle.every);
    const closedAfterMs = await Promise.race([
      closed,
      new Promise<number>((r) => setTimeout(() => r(-1), 20_000)),
    ]);
    clearInterval(timer);
    socket.destroy();
    return { received, closedAfterMs };
  }
  const post = (extra: string) =>
    `POST /api/jobs/tick/pause HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 65000\r\n${extra}\r\n`;

  it('a refused request (no token) is answered 401 and its socket closed, whatever body is still coming', async () => {
    await withDashboard({ token: TOKEN }, async (d) => {
      const r = await slowClient(d.url, post(''), { every: 200, times: 100 });
      expect(r.received).toMatch(/^HTTP\/1\.1 401 /);
      expect(r.received.toLowerCase()).toContain('connection: close');
      expect(r.closedAfterMs).toBeGreaterThanOrEqual(0);
      expect(r.closedAfterMs).toBeLessThan(5_000);
    });
  });

  it('an authenticated body sent a byte at a time is cut off after requestTimeoutMs', async () => {
    await withDashboard({ token: TOKEN, requestTimeoutMs: 2_000 }, async (d) => {
      const r = await slowClient(d.url, post(`Authorization: Bearer ${TOKEN}\r\n`), {
        every: 300,
        times: 1_000,
      });
      // Node answers 408 (or just closes) once the request is not complete in time.
      expect(r.closedAfterMs).toBeGreaterThanOrEqual(1_500);
      expect(r.closedAfterMs).toBeLessThan(8_000);
      expect(r.received).not.toMatch(/^HTTP\/1\.1 2/);
      // The dashboard still serves everyone else.
      const ok = await fetch(`${d.url}/api/jobs`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(ok.status).toBe(200);
    });
  });

  it('headers that never end, and an idle socket, are closed too', async () => {
    await withDashboard({ requestTimeoutMs: 2_000 }, async (d) => {
      const slowHeaders = await slowClient(d.url, 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n', {
        every: 300,
        times: 1_000,
      });
      expect(slowHeaders.closedAfterMs).toBeGreaterThanOrEqual(1_500);
      expect(slowHeaders.closedAfterMs).toBeLessThan(8_000);
      const idle = await slowClient(d.url, '', { every: 1_000, times: 0 });
      expect(idle.closedAfterMs).toBeGreaterThanOrEqual(1_500);
      expect(idle.closedAfterMs).toBeLessThan(8_000);
    });
  });

  it('requestTimeoutMs is checked', async () => {
    for (const bad of [0, 999, 1.5, 3_600_001, '30s'])
      await expect(
        startDashboard({ store: cluster.store, requestTimeoutMs: bad as number, port: 0 }),
      ).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('requestTimeoutMs'),
      });
  });
});
