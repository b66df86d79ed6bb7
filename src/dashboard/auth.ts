import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

/**
 * The dashboard's access rules.
 *
 * - Loopback only unless a token is set: `startDashboard` refuses any other bind address without
 *   one (see {@link isLoopbackHost}). Without a token, requests must also name a loopback host in
 *   their `Host` header, so a DNS-rebinding page cannot read or drive the dashboard.
 * - With a token every request needs it: `Authorization: Bearer <token>`, or the session cookie
 *   that `?token=<token>` on a page URL sets. Comparisons are constant time over SHA-256 digests
 *   (equal lengths whatever the input).
 * - Actions are POST only. A POST not authenticated by a Bearer header (a browser form, with or
 *   without the cookie) must carry the CSRF token, and its Origin/Referer/Sec-Fetch-Site, when
 *   present, must name this dashboard.
 */

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

/** The host part of a `Host` header value (`name:port`, `[v6]:port`). */
export function hostOfHeader(value: string): string {
  if (value.startsWith('[')) return value.slice(0, value.indexOf(']') + 1);
  const colon = value.lastIndexOf(':');
  return colon === -1 ? value : value.slice(0, colon);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Constant-time string equality (both sides hashed first, so their lengths never leak). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/** Per-dashboard secrets and the checks built on them. */
export class Auth {
  /** Per-process secret for CSRF tokens: a restart invalidates open forms, nothing else. */
  private readonly secret = randomBytes(32);
  readonly csrfToken: string;
  /** The cookie value for a valid token: derived from it, so the token itself never sits in a cookie. */
  private readonly sessionValue: string | undefined;

  constructor(readonly token: string | undefined) {
    this.csrfToken = createHmac('sha256', this.secret).update('oncely-dashboard-csrf').digest('base64url');
    this.sessionValue =
      token === undefined
        ? undefined
        : createHmac('sha256', token).update('oncely-dashboard-session').digest('base64url');
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

  sessionMatches(cookieValue: string | undefined): boolean {
    return (
      this.sessionValue !== undefined &&
      cookieValue !== undefined &&
      safeEqual(cookieValue, this.sessionValue)
    );
  }

  /** `Set-Cookie` for a browser that presented the right `?token=`. */
  sessionCookie(secure: boolean): string {
    return `${SESSION_COOKIE}=${this.sessionValue}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
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
 * page with `Referrer-Policy: no-referrer`) proves nothing either way and is left to the CSRF token.
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
