/**
 * Bad HTTP requests to the dashboard, catalogued (docs/faults.md, "Bad input"): each gets its
 * status and, on /api, the JSON error shape `{ statusCode, code, error, message }` with a stable
 * code (never a framework's `FST_ERR_…`) and a message saying what to send instead; nothing is
 * changed, nothing leaks (no file outside the dashboard, no token echoed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dashboard } from '../src/dashboard/server.js';
import { type Cluster, dashboardFor, startCluster } from './fixtures/dashboard/cluster.js';
import { type RawResponse, rawRequest } from './fixtures/dashboard/raw-http.js';

const TOKEN = 'bad-input-token-0123456789';
const JSON_TYPE = { 'content-type': 'application/json' };

let cluster: Cluster;
let open: Dashboard;
let guarded: Dashboard;

beforeAll(async () => {
  cluster = await startCluster('memory:');
  open = await dashboardFor(cluster);
  guarded = await dashboardFor(cluster, { token: TOKEN });
}, 30_000);
afterAll(async () => {
  await open?.close();
  await guarded?.close();
  await cluster?.close();
});

/** The JSON error of `r`: exactly the documented shape, with `status` and `code`. */
function jsonError(r: RawResponse, status: number, code: string): { message: string } {
  expect(r.status, r.text).toBe(status);
  expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
  const body = JSON.parse(r.text) as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(['code', 'error', 'message', 'statusCode']);
  expect(body).toMatchObject({ statusCode: status, code });
  return body as { message: string };
}

const isPaused = async (job: string) => (await cluster.scheduler.jobs()).find((j) => j.name === job)?.paused;

describe('action requests (POST /api/jobs/:name/…)', () => {
  it.each<[string, string, Record<string, string>, string | undefined, number, string, RegExp]>([
    [
      'a body that is not JSON',
      '/api/jobs/nightly-report/pause',
      JSON_TYPE,
      '{"paused": tru',
      400,
      'INVALID_ARGUMENT',
      /^request body is not valid JSON$/,
    ],
    [
      'a body over 64 KiB',
      '/api/jobs/nightly-report/pause',
      JSON_TYPE,
      JSON.stringify({ pad: 'x'.repeat(70_000) }),
      413,
      'PAYLOAD_TOO_LARGE',
      /request body is over 64 KiB; the dashboard's actions take no body/,
    ],
    [
      'Content-Type application/xml',
      '/api/jobs/nightly-report/pause',
      { 'content-type': 'application/xml' },
      '<pause/>',
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      /Content-Type "application\/xml" is not accepted: send application\/json, application\/x-www-form-urlencoded, or no body/,
    ],
    [
      'an unknown job',
      '/api/jobs/no-such-job/pause',
      JSON_TYPE,
      undefined,
      404,
      'NOT_FOUND',
      /no job named "no-such-job" is recorded in this store/,
    ],
    [
      'a job name with NUL (%00)',
      '/api/jobs/%00/pause',
      JSON_TYPE,
      undefined,
      400,
      'INVALID_ARGUMENT',
      /job name "\\u0000" must not contain control characters/,
    ],
    [
      'a 300-character job name',
      `/api/jobs/${'x'.repeat(300)}/pause`,
      JSON_TYPE,
      undefined,
      400,
      'INVALID_ARGUMENT',
      /job name is 300 characters long as stored .*at most 255 are allowed/,
    ],
    [
      'a name that is not valid percent-encoding (%zz)',
      '/api/jobs/%zz/pause',
      JSON_TYPE,
      undefined,
      400,
      'INVALID_ARGUMENT',
      /the request path is not valid percent-encoding \(encode names with encodeURIComponent\)/,
    ],
    [
      'an unknown action (explode)',
      '/api/jobs/nightly-report/explode',
      JSON_TYPE,
      undefined,
      404,
      'NOT_FOUND',
      /no such page: POST \/api\/jobs\/nightly-report\/explode/,
    ],
  ])('POST with %s', async (_title, path, headers, body, status, code, message) => {
    const r = await rawRequest(open.url, path, {
      method: 'POST',
      headers,
      ...(body !== undefined && { body }),
    });
    expect(jsonError(r, status, code).message).toMatch(message);
    // Every answer, framework errors included, carries the security headers.
    expect(r.headers['content-security-policy']).toContain("default-src 'self'");
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(await isPaused('nightly-report')).toBe(false);
  });
});

describe('methods', () => {
  it.each<[string, string, string, string]>([
    ['GET on an action', 'GET', '/api/jobs/nightly-report/pause', 'POST'],
    ['PUT on an action', 'PUT', '/api/jobs/nightly-report/trigger', 'POST'],
    ['DELETE /api/jobs', 'DELETE', '/api/jobs', 'GET, HEAD'],
    ['POST /api/history', 'POST', '/api/history', 'GET, HEAD'],
  ])('%s: 405 with Allow', async (_title, method, path, allow) => {
    const r = await rawRequest(open.url, path, { method, headers: JSON_TYPE });
    const { message } = jsonError(r, 405, 'METHOD_NOT_ALLOWED');
    expect(r.headers.allow).toBe(allow);
    expect(message).toBe(`${method} is not allowed on ${path}: use ${allow.replace(', ', ' or ')}`);
    expect(await isPaused('nightly-report')).toBe(false);
  });

  it('GET on a form action page: 405 with Allow: POST (an HTML page)', async () => {
    const r = await rawRequest(open.url, '/jobs/nightly-report/pause');
    expect(r.status).toBe(405);
    expect(r.headers.allow).toBe('POST');
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.text).toContain('GET is not allowed on /jobs/nightly-report/pause: use POST');
  });
});

describe('query parameters', () => {
  it.each<[string, string, RegExp]>([
    [
      'misspelt parameter lmit',
      '/api/history?lmit=5',
      /unknown query parameter "lmit" \(did you mean "limit"\?\); \/api\/history takes job, limit, before/,
    ],
    [
      'a parameter /api/jobs does not take',
      '/api/jobs?job=tick',
      /unknown query parameter "job"; \/api\/jobs takes none/,
    ],
    ['limit given twice', '/api/history?limit=5&limit=6', /limit must be given once/],
    ['limit=abc', '/api/history?limit=abc', /limit must be a whole number from 1 to 500; got "abc"/],
    [
      'limit=501 on history',
      '/api/history?limit=501',
      /limit must be a whole number from 1 to 500; got "501"/,
    ],
    ['limit=0 on locks', '/api/locks?limit=0', /limit must be a whole number from 1 to 10000; got "0"/],
    [
      'before=nope',
      '/api/history?before=nope',
      /history before must be a Date, epoch ms, or a cursor from historyCursor\(\)/,
    ],
    [
      'before=2024-13-45 (not a date)',
      '/api/history?before=2024-13-45T00:00:00Z',
      /before must be an ISO-8601 time, epoch ms or a page cursor; got "2024-13-45T00:00:00Z"/,
    ],
    [
      'job with a control character',
      '/api/history?job=%01',
      /job name "\\u0001" must not contain control characters/,
    ],
    [
      'schedules after= with a control character',
      '/api/schedules?after=%01',
      /id must be 1-200 printable characters/,
    ],
  ])('%s: 400', async (_title, path, message) => {
    expect(jsonError(await rawRequest(open.url, path), 400, 'INVALID_ARGUMENT').message).toMatch(message);
  });

  it('a bad query on a page (refresh=0): 400 as an HTML page naming the parameter', async () => {
    const r = await rawRequest(open.url, '/?refresh=0');
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.text).toContain('refresh must be a whole number of seconds from 1 to 3600; got &quot;0&quot;');
  });
});

describe('paths', () => {
  it.each([
    '/assets/../../package.json',
    '/assets/..%2f..%2fpackage.json',
    '/assets/%2e%2e/%2e%2e/package.json',
    '/assets/..%5c..%5cpackage.json',
    '/../../../../etc/passwd',
    '/assets/style.css/../../../etc/passwd',
  ])('path traversal %s: 404, no file served', async (path) => {
    const r = await rawRequest(open.url, path);
    expect(r.status, path).toBe(404);
    expect(r.text).not.toContain('"name": "oncely"');
    expect(r.text).not.toContain('root:');
  });

  it('a Host header that is not loopback (no token set): 403 naming ONCELY_DASHBOARD_TOKEN', async () => {
    const r = await rawRequest(open.url, '/api/jobs', { headers: { host: 'evil.example' } });
    expect(jsonError(r, 403, 'FORBIDDEN').message).toMatch(
      /Host "evil\.example" is not a loopback name; set ONCELY_DASHBOARD_TOKEN to serve other hosts/,
    );
  });
});

describe('tokens (dashboard with ONCELY_DASHBOARD_TOKEN)', () => {
  // Each from its own source address: wrong tokens are throttled per address.
  it.each<[string, string, Record<string, string>, string, RegExp]>([
    [
      'no token',
      '/api/jobs',
      {},
      '127.0.0.51',
      /^this dashboard needs a token: send Authorization: Bearer <ONCELY_DASHBOARD_TOKEN>, or open a page once with \?token=<token>$/,
    ],
    [
      'a wrong token',
      '/api/jobs',
      { authorization: 'Bearer wrong-token-0123456789' },
      '127.0.0.52',
      /^the Authorization header does not carry the dashboard token: send Authorization: Bearer/,
    ],
    [
      'the token as Basic auth',
      '/api/jobs',
      { authorization: `Basic ${TOKEN}` },
      '127.0.0.53',
      /the Authorization header does not carry the dashboard token/,
    ],
    [
      'a forged session cookie',
      '/api/jobs',
      { cookie: 'oncely_session=forged' },
      '127.0.0.54',
      /this dashboard needs a token/,
    ],
  ])('%s: 401 with WWW-Authenticate', async (_title, path, headers, from, message) => {
    const r = await rawRequest(guarded.url, path, { headers, from });
    expect(jsonError(r, 401, 'UNAUTHORIZED').message).toMatch(message);
    expect(r.headers['www-authenticate']).toBe('Bearer realm="oncely"');
    expect(r.text).not.toContain(TOKEN);
  });

  it('the token in the query string of a POST: 401 (?token= logs in page GETs only), nothing changed', async () => {
    const r = await rawRequest(guarded.url, `/api/jobs/nightly-report/pause?token=${TOKEN}`, {
      method: 'POST',
      headers: JSON_TYPE,
      from: '127.0.0.55',
    });
    expect(jsonError(r, 401, 'UNAUTHORIZED').message).toMatch(/^\?token= works on page GETs only/);
    expect(r.text).not.toContain(TOKEN);
    expect(await isPaused('nightly-report')).toBe(false);
  });

  it('the token in the query string of a GET: not an error; a 303 to the same URL without it, and a session cookie', async () => {
    const r = await rawRequest(guarded.url, `/api/history?limit=2&token=${TOKEN}`, { from: '127.0.0.56' });
    expect(r.status).toBe(303);
    expect(r.headers.location).toBe('/api/history?limit=2');
    expect(String(r.headers['set-cookie'])).toMatch(/^oncely_session=/);
    expect(String(r.headers['set-cookie'])).not.toContain(TOKEN);
  });
});
