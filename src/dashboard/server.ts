import type { AddressInfo } from 'node:net';
import formbody from '@fastify/formbody';
import Fastify, { type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify';
import { invalidArgument, OncelyError } from '../core/errors.js';
import { type Logger, silentLogger } from '../core/logger.js';
import { createScheduler, type Scheduler } from '../scheduler/scheduler.js';
import type { Store } from '../store/types.js';
import { authenticate } from './access.js';
import { registerApi } from './api.js';
import { Auth, isLoopbackHost, MIN_TOKEN_LENGTH } from './auth.js';
import { type Deps, HttpError, STATUS_TEXT, sendJsonError, wantsJson } from './context.js';
import { frameworkError } from './framework-errors.js';
import { html, layout } from './html.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, limitedServer } from './http-server.js';
import { RouteMethods } from './methods.js';
import { DashboardMetrics } from './metrics.js';
import { registerPages } from './pages/routes.js';
import { FAVICON_SVG, STYLE_CSS } from './style.js';

export interface DashboardOptions {
  store: Store;
  /** The scheduler running in this process, if any: its events feed /metrics. */
  scheduler?: Scheduler;
  /** Default 127.0.0.1. Any non-loopback host requires `token`. */
  host?: string;
  /** Default 8080; 0 picks a free port. */
  port?: number;
  /** Usually from ONCELY_DASHBOARD_TOKEN; when set (at least 16 characters), every request needs it. */
  token?: string;
  logger?: Logger;
  /**
   * How long a client has to send a whole request, body included (default 30 s, at least 1 s);
   * its headers must come within 10 s, and an idle socket is closed after this long. See
   * http-server.ts.
   */
  requestTimeoutMs?: number;
}

export interface Dashboard {
  /** e.g. http://127.0.0.1:8080 */
  url: string;
  close(): Promise<void>;
}

/** Largest request body: actions take none, forms a few fields. */
const BODY_LIMIT = 64 * 1024;

/** No script at all; styles and the icon come from /assets. */
const CSP =
  "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; object-src 'none'; " +
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/**
 * Starts the web dashboard: jobs, a job's history timeline, nodes and locks as HTML pages, the
 * same as a JSON API under /api, and Prometheus metrics at /metrics.
 *
 * Binds 127.0.0.1 by default. Any other host needs a `token`, and a token is at least 16
 * characters (otherwise `INVALID_ARGUMENT` naming ONCELY_DASHBOARD_TOKEN); with a token every
 * request must carry it, as `Authorization: Bearer <token>` or the session cookie a browser gets
 * from opening any page with `?token=<token>`. The security rules: docs/dashboard.md, "Security". Without `scheduler`, an unstarted one is created for reads and actions (it never
 * claims work).
 *
 * @example
 * const dashboard = await startDashboard({ store, scheduler, port: 8080 });
 * console.log(`dashboard on ${dashboard.url}`);
 * await dashboard.close();
 */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  if (!options || typeof options !== 'object' || !options.store)
    throw invalidArgument('startDashboard needs { store } (see openStore)');
  const host = options.host ?? '127.0.0.1';
  if (typeof host !== 'string' || host.trim() === '')
    throw invalidArgument('dashboard host must be a host name or IP address such as 127.0.0.1');
  const port = options.port ?? 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw invalidArgument(`dashboard port must be a whole number from 0 to 65535; got ${String(port)}`);
  const token = typeof options.token === 'string' && options.token.trim() !== '' ? options.token : undefined;
  if (!isLoopbackHost(host) && token === undefined)
    throw invalidArgument(
      `refusing to serve the dashboard on ${JSON.stringify(host)} without a token: set ONCELY_DASHBOARD_TOKEN ` +
        `to a secret of at least ${MIN_TOKEN_LENGTH} characters (every request must then carry it), or bind a loopback address such as 127.0.0.1`,
    );
  // Any token that is set, loopback or not: a short one is guessable however requests are throttled.
  if (token !== undefined && [...token.trim()].length < MIN_TOKEN_LENGTH)
    throw invalidArgument(
      `ONCELY_DASHBOARD_TOKEN is too short (${[...token.trim()].length} characters): use at least ${MIN_TOKEN_LENGTH}, ` +
        'e.g. the output of `openssl rand -base64 24`',
    );

  const store = options.store;
  const logger = options.logger ?? silentLogger;
  const scheduler = options.scheduler ?? createScheduler({ store, logger });
  const metrics = new DashboardMetrics(store);
  if (options.scheduler) metrics.attach(options.scheduler);
  const auth = new Auth(token);
  const deps: Deps = { store, scheduler, auth, metrics, logger };

  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!Number.isInteger(requestTimeoutMs) || requestTimeoutMs < 1_000 || requestTimeoutMs > 3_600_000)
    throw invalidArgument(
      `dashboard requestTimeoutMs must be a whole number of ms from 1000 to 3600000; got ${String(requestTimeoutMs)}`,
    );

  const methods = new RouteMethods();
  const app = Fastify({
    serverFactory: limitedServer({ requestTimeoutMs }),
    logger: false,
    bodyLimit: BODY_LIMIT,
    // Job names are up to 255 characters, more when percent-encoded.
    routerOptions: { maxParamLength: 2048 },
    forceCloseConnections: true,
    trustProxy: false,
    // A path the router cannot even decode: answered before any hook, so the headers are set here.
    frameworkErrors: (err, req, reply) => {
      securityHeaders(reply);
      const e = frameworkError(400, err.code, err.message, BODY_LIMIT, undefined);
      sendError(req, reply, e.status, e.code, e.message, store.kind);
    },
  });
  app.addHook('onRoute', (route) => methods.add(route.url, route.method));
  await app.register(formbody);
  // An action POST with `Content-Type: application/json` and no body is fine (there is nothing to send).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, {});
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new HttpError(400, 'INVALID_ARGUMENT', 'request body is not valid JSON'), undefined);
    }
  });

  app.addHook('onRequest', async (req, reply) => {
    securityHeaders(reply);
    if (authenticate(req, reply, auth)) return reply;
  });

  app.setErrorHandler((err: FastifyError | Error, req, reply) => {
    let status = 500;
    let code = 'INTERNAL';
    let message = 'internal error (see the dashboard log)';
    if (err instanceof HttpError) {
      void reply.headers(err.headers);
      status = err.status;
      code = err.code;
      message = err.message;
    } else if (err instanceof OncelyError) {
      code = err.code;
      status = err.code === 'INVALID_ARGUMENT' ? 400 : err.code === 'STORE_UNAVAILABLE' ? 503 : 500;
      if (status !== 500) message = err.message;
    } else if (
      typeof (err as FastifyError).statusCode === 'number' &&
      (err as FastifyError).statusCode! < 500
    ) {
      ({ status, code, message } = frameworkError(
        (err as FastifyError).statusCode!,
        (err as FastifyError).code,
        err.message,
        BODY_LIMIT,
        req.headers['content-type'],
      ));
    }
    if (status >= 500) logger.error(`oncely dashboard: ${req.method} ${req.url.split('?')[0]} failed`, err);
    sendError(req, reply, status, code, message, store.kind);
  });

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '';
    const allow = methods.allowed(path);
    if (allow.length > 0) {
      void reply.header('Allow', allow.join(', '));
      sendError(
        req,
        reply,
        405,
        'METHOD_NOT_ALLOWED',
        `${req.method} is not allowed on ${path}: use ${allow.join(' or ')}`,
        store.kind,
      );
      return;
    }
    sendError(
      req,
      reply,
      404,
      'NOT_FOUND',
      `no such page: ${req.method} ${req.url.split('?')[0]}`,
      store.kind,
    );
  });

  app.get('/assets/style.css', (_req, reply) =>
    reply.header('Cache-Control', 'private, max-age=300').type('text/css; charset=utf-8').send(STYLE_CSS),
  );
  app.get('/assets/favicon.svg', (_req, reply) =>
    reply.header('Cache-Control', 'private, max-age=86400').type('image/svg+xml').send(FAVICON_SVG),
  );
  app.get('/favicon.ico', (_req, reply) => reply.redirect('/assets/favicon.svg', 301));
  app.get('/metrics', async (_req, reply) => reply.type(metrics.contentType).send(await metrics.scrape()));
  registerApi(app, deps);
  registerPages(app, deps);

  try {
    await app.listen({ host, port });
  } catch (err) {
    metrics.close();
    await app.close().catch(() => {});
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EADDRINUSE')
      throw invalidArgument(`dashboard port ${port} on ${host} is already in use; pick another with --port`);
    if (e.code === 'EADDRNOTAVAIL' || e.code === 'ENOTFOUND')
      throw invalidArgument(`dashboard host ${JSON.stringify(host)} is not an address of this machine`);
    throw OncelyError.from(err, 'INTERNAL', `dashboard could not listen on ${host}:${port}: ${e.message}`);
  }
  const address = app.server.address() as AddressInfo;
  const shown = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const url = `http://${shown}:${address.port}`;
  logger.info(`oncely dashboard listening on ${url}${token ? ' (token required)' : ''}`);

  let closed: Promise<void> | undefined;
  return {
    url,
    close: () => {
      closed ??= (async () => {
        metrics.close();
        await app.close();
      })();
      return closed;
    },
  };
}

/** The headers every answer carries, errors included. */
function securityHeaders(reply: FastifyReply): void {
  void reply.headers({
    'Content-Security-Policy': CSP,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cache-Control': 'no-store',
  });
}

function sendError(
  req: FastifyRequest,
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  storeKind: string,
): void {
  if (status === 401) reply.header('WWW-Authenticate', 'Bearer realm="oncely"');
  // Refused: the socket goes with the answer, whatever body the client is still sending.
  if (status === 401 || status === 403 || status === 429) reply.header('Connection', 'close');
  if (wantsJson(req)) {
    sendJsonError(reply, status, code, message);
    return;
  }
  const title = `${status} ${STATUS_TEXT[status] ?? 'Error'}`;
  void reply
    .code(status)
    .type('text/html; charset=utf-8')
    .send(
      layout({
        title,
        active: 'job',
        body: html`<h1>${title}</h1><p class="error-message">${message}</p><p><a href="/">Back to the jobs</a></p>`,
        storeKind,
        now: Date.now(),
      }),
    );
}
