import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { Sessions } from './sessions.js';
import { FailureThrottle } from './throttle.js';

/**
 * The dashboard's access rules (docs/dashboard.md, "Security").
 *
 * - Loopback only unless a token is set: `startDashboard` refuses any other bind address without
 *   one (see {@link isLoopbackHost}), and any token shorter than {@link MIN_TOKEN_LENGTH}. Without
 *   a token, requests must also carry a `Host` header that is exactly a loopback name (see
 *   {@link hostOfHeader}), so a DNS-rebinding page cannot read or drive the dashboard.
 * - With a token every request needs it: `Authorization: Bearer <token>`, or the cookie of a
 *   session that `?token=<token>` on a page URL opens (sessions.ts: random ids, server-side).
 *   Token comparisons are constant time over SHA-256 digests (equal lengths whatever the input);
 *   wrong tokens are throttled per client address (throttle.ts).
 * - Actions are POST only, and each needs a proof that a cross-site page could not produce (see
 *   `checkPost` in context.ts): the Bearer header, the CSRF token, or — the JSON API without a
 *   dashboard token — `Content-Type: application/json`. Unless Bearer-authenticated, a POST whose
 *   Sec-Fetch-Site/Origin/Referer names another site is refused whatever it carries.
 */

/** The shortest dashboard token accepted (characters). */
export const MIN_TOKEN_LENGTH = 16;

export const SESSION_COOKIE = 'oncely_session';
export const CSRF_FIELD = 'csrf';
export const CSRF_HEADER = 'x-csrf-token';

/** `localhost`, 127.0.0.0/8, `::1` (and its bracketed and IPv4-mapped forms). */
export function isLoopbackHost(host: string): boolean {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (h.startsWith('::ffff:') && isIP(h.slice(7)) === 4) h = h.slice(7);
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h === '0:0:0:0:0:0:0:1';
  return false;
}

/**
 * The host name of a `Host` header value, or `undefined` unless the value is exactly
 * `name[:port]` or `[v6][:port]` in the form a browser sends: no userinfo
 * (`127.0.0.1:8097@evil.com`), path, query or fragment (`evil.com#@127.0.0.1`), escapes, spaces,
 * or anything the URL parser would rewrite (`127.1`, `[::ffff:127.0.0.1]`). Case is ignored and
 * the default port may be written out (`localhost:80`).
 */
export function hostOfHeader(value: string | undefined): string | undefined {
  if (value === undefined || value === '' || value.length > 300) return undefined;
  const header = value.toLowerCase();
  let url: URL;
  try {
    url = new URL(`http://${header}`);
  } catch {
    return undefined;
  }
  if (
    url.username !== '' ||
    url.password !== '' ||
    url.pathname !== '/' ||
    url.search !== '' ||
    url.hash !== ''
  )
    return undefined;
  if (header !== url.host && !(url.port === '' && header === `${url.host}:80`)) return undefined;
  return url.hostname;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Constant-time string equality (both sides hashed first, so their lengths never leak). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/** Per-dashboard secrets, sessions and throttle, and the checks built on them. */
export class Auth {
  /** Per-process secret for CSRF tokens: a restart invalidates open forms, nothing else. */
  private readonly secret = randomBytes(32);
  readonly csrfToken: string;
  readonly sessions = new Sessions();
  readonly throttle = new FailureThrottle();

  constructor(readonly token: string | undefined) {
    this.csrfToken = createHmac('sha256', this.secret).update('oncely-dashboard-csrf').digest('base64url');
  }

  get required(): boolean {
    return this.token !== undefined;
  }

  tokenMatches(candidate: string | undefined): boolean {
    return this.token !== undefined && candidate !== undefined && safeEqual(candidate, this.token);
  }

  /** The Bearer token of an `Authorization` header, if it has one. */
  static bearer(header: string | undefined): string | undefined {
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header ?? '');
    return m?.[1];
  }

  /** `Set-Cookie` for a new session (see {@link Sessions}); `secure`: see `secureCookie` in access.ts. */
  static sessionCookie(id: string, secure: boolean): string {
    return `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
  }

  csrfMatches(candidate: unknown): boolean {
    return typeof candidate === 'string' && safeEqual(candidate, this.csrfToken);
  }
}

/** Parses a `Cookie` header (first value of each name wins). */
export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    const name = part.slice(0, eq).trim();
    if (name === '' || out.has(name)) continue;
    out.set(name, part.slice(eq + 1).trim());
  }
  return out;
}

/**
 * Whether a state-changing request comes from this dashboard's own pages, judged by the headers a
 * browser sets and a page cannot forge: `Sec-Fetch-Site` (same-origin only), then `Origin`, then
 * `Referer`, whichever is present. `Origin: null` (what a browser sends for a form post from a
 * page with `Referrer-Policy: no-referrer`, as these pages are, and for one from a sandboxed or
 * `data:` page) proves nothing either way: such a POST passes only with another proof (checkPost).
 * Returns the reason for refusing, or `undefined` when the request may go on.
 */
export function crossSiteReason(headers: {
  host?: string | undefined;
  origin?: string | undefined;
  referer?: string | undefined;
  secFetchSite?: string | undefined;
}): string | undefined {
  const site = headers.secFetchSite?.toLowerCase();
  if (site !== undefined && site !== 'same-origin' && site !== 'none')
    return `cross-site request refused (Sec-Fetch-Site: ${site})`;
  const host = headers.host?.toLowerCase();
  const sameHost = (url: string): boolean => {
    try {
      return host !== undefined && new URL(url).host.toLowerCase() === host;
    } catch {
      return false;
    }
  };
  if (headers.origin !== undefined && headers.origin !== 'null') {
    if (!sameHost(headers.origin)) return 'cross-origin request refused (Origin does not match Host)';
    return undefined;
  }
  if (headers.referer !== undefined && headers.origin === undefined && !sameHost(headers.referer))
    return 'cross-origin request refused (Referer does not match Host)';
  return undefined;
}
