import type { FastifyReply, FastifyRequest } from 'fastify';
import { Auth, hostOfHeader, isLoopbackHost, parseCookies, SESSION_COOKIE } from './auth.js';
import { HttpError, setAuthVia } from './context.js';
import { localPath, withoutParam } from './redirect.js';
import { clientKey } from './throttle.js';

/**
 * Who may be served, decided before routing (see auth.ts for the rules). Lets the request through
 * (returns false), or answers it: 403 for a Host that is not exactly a loopback name when no token
 * is set; 429 while the client's address cools down after wrong tokens; 401 without the right
 * token; a 303 that swaps a right `?token=` for a new session's cookie (returns true).
 */
export function authenticate(req: FastifyRequest, reply: FastifyReply, auth: Auth): boolean {
  if (!auth.required) {
    // No token means loopback only: a Host that is not loopback is a DNS-rebinding page or a proxy.
    const hostHeader = req.headers.host;
    const host = hostOfHeader(hostHeader);
    if (host === undefined || !isLoopbackHost(host))
      throw new HttpError(
        403,
        'FORBIDDEN',
        `Host ${JSON.stringify(hostHeader ?? '')} is not a loopback name; set ONCELY_DASHBOARD_TOKEN to serve other hosts`,
      );
    setAuthVia(req, 'none');
    return false;
  }
  const client = clientKey(req.socket.remoteAddress);
  const authorization = req.headers.authorization;
  const queryToken = tokenInQuery(req.url);
  if (authorization !== undefined || queryToken !== null) {
    // Cooling down: no token is even compared, so the answer says nothing about it.
    const wait = auth.throttle.retryAfterMs(client);
    if (wait > 0) {
      const seconds = Math.ceil(wait / 1000);
      throw new HttpError(
        429,
        'TOO_MANY_REQUESTS',
        `too many wrong tokens from this address: try again in ${seconds} s`,
        { 'Retry-After': String(seconds) },
      );
    }
  }
  if (authorization !== undefined) {
    if (auth.tokenMatches(Auth.bearer(authorization))) {
      setAuthVia(req, 'bearer');
      return false;
    }
    auth.throttle.fail(client);
    throw unauthorized('the Authorization header does not carry the dashboard token');
  }
  if (queryToken !== null) {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw unauthorized('?token= works on page GETs only');
    if (!auth.tokenMatches(queryToken)) {
      auth.throttle.fail(client);
      throw unauthorized('wrong token');
    }
    const back = withoutParam(localPath(req.url, '/'), 'token');
    const cookie = Auth.sessionCookie(auth.sessions.create(), secureCookie(req));
    void reply.header('Set-Cookie', cookie).redirect(back, 303);
    return true;
  }
  if (auth.sessions.touch(parseCookies(req.headers.cookie).get(SESSION_COOKIE))) {
    setAuthVia(req, 'cookie');
    return false;
  }
  throw unauthorized('this dashboard needs a token');
}

/**
 * Whether the session cookie gets `Secure`: unless the browser evidently talks plain HTTP from
 * another machine. So yes over TLS, with a proxy's `X-Forwarded-Proto: https`, and when the peer is
 * on this machine (a local browser: http://127.0.0.1 and http://localhost are secure contexts that
 * keep `Secure` cookies; or a local TLS-terminating proxy, even one that sends no
 * X-Forwarded-Proto). Not for a remote peer on plain HTTP: its browser would drop the cookie and
 * could never log in. The header is trusted for this only: all it can do is harden the sender's
 * own cookie.
 */
function secureCookie(req: FastifyRequest): boolean {
  if ((req.socket as { encrypted?: boolean }).encrypted === true) return true;
  const proto = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(proto) ? proto[0] : proto)?.split(',')[0]?.trim().toLowerCase();
  if (first !== undefined) return first === 'https';
  return isLoopbackHost(req.socket.remoteAddress ?? '');
}

/** The `token` query parameter of a request target (any form Node accepts), or null. */
function tokenInQuery(target: string): string | null {
  try {
    return new URL(target, 'http://dashboard.invalid').searchParams.get('token');
  } catch {
    return null;
  }
}

function unauthorized(why: string): HttpError {
  return new HttpError(
    401,
    'UNAUTHORIZED',
    `${why}: send Authorization: Bearer <ONCELY_DASHBOARD_TOKEN>, or open a page once with ?token=<token>`,
  );
}
