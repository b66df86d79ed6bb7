import type { FastifyReply, FastifyRequest } from 'fastify';
import { invalidArgument } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { didYouMean } from '../core/options.js';
import { keys } from '../scheduler/keys.js';
import { liveNodesOf } from '../scheduler/observe/inspect.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { Store } from '../store/types.js';
import { type Auth, CSRF_FIELD, CSRF_HEADER, crossSiteReason } from './auth.js';
import type { DashboardMetrics } from './metrics.js';

/** What every route needs. */
export interface Deps {
  store: Store;
  /** The scheduler actions and reads go through (the caller's, or an unstarted one of our own). */
  scheduler: Scheduler;
  auth: Auth;
  metrics: DashboardMetrics;
  logger: Logger;
}

/** An error with an HTTP status, rendered as JSON on /api and as a page elsewhere. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Extra response headers (`Retry-After` of a 429). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

/** How a request proved it may be served. */
export type AuthVia = 'bearer' | 'cookie' | 'none';
const authVia = new WeakMap<FastifyRequest, AuthVia>();
export function setAuthVia(req: FastifyRequest, via: AuthVia): void {
  authVia.set(req, via);
}

export const MAX_LIMIT = 10_000;
/** History pages (`/api/history`, `/jobs/:name`) hold at most this many entries; page on with `before`. */
export const MAX_HISTORY_LIMIT = 500;
/** Audit trail pages (`/audit`, `/api/audit`) hold at most this many entries; page on with `after`. */
export const MAX_AUDIT_LIMIT = 1000;
/** Stored-schedule pages (`/api/schedules`) hold at most this many; page on with `after`. */
export const MAX_SCHEDULES_LIMIT = 500;
/** Stored schedules per page of a job's "Stored schedules" section. */
export const SCHEDULES_PAGE = 50;

/** `?limit=`: absent = `fallback`; otherwise a whole number from 1 to `max` or a 400 naming the maximum. */
export function parseLimit(value: unknown, fallback: number, max = MAX_LIMIT): number {
  if (value === undefined) return fallback;
  const text = typeof value === 'string' ? value.trim() : undefined;
  const n = text !== undefined && /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > max)
    throw invalidArgument(`limit must be a whole number from 1 to ${max}; got ${JSON.stringify(value)}`);
  return n;
}

/**
 * `?before=` of a history page: epoch ms, an ISO-8601 time (older fire times only), or the opaque
 * cursor of a "next"/"older" link (exactly the next page; the scheduler validates it).
 */
export function parseBefore(value: string | undefined): Date | number | string | undefined {
  if (value === undefined || value === '') return undefined;
  if (/^\d{1,15}$/.test(value)) return Number(value);
  if (/^\d{4}-\d\d-\d\d(T|$)/.test(value)) {
    const ms = Date.parse(value);
    if (Number.isNaN(ms))
      throw invalidArgument(
        `before must be an ISO-8601 time, epoch ms or a page cursor; got ${JSON.stringify(value)}`,
      );
    return ms;
  }
  return value;
}

/** `?refresh=` of a page: seconds between reloads, 1 to 3600, or none. */
export function parseRefresh(value: unknown): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > 3600)
    throw invalidArgument(
      `refresh must be a whole number of seconds from 1 to 3600; got ${JSON.stringify(value)}`,
    );
  return n;
}

/** A single string query parameter (repeats are a 400). */
export function queryString(query: unknown, name: string): string | undefined {
  const value = (query as Record<string, unknown> | undefined)?.[name];
  if (value === undefined || typeof value === 'string') return value;
  throw invalidArgument(`${name} must be given once`);
}

/**
 * Refuses a query parameter `route` does not take (`INVALID_ARGUMENT`, a 400 naming it with a
 * "did you mean"), so a misspelt `?lmit=5` is not silently ignored. `token` (the login parameter,
 * handled before routing) is always allowed.
 */
export function checkQuery(query: unknown, route: string, allowed: readonly string[]): void {
  for (const name of Object.keys((query as Record<string, unknown> | undefined) ?? {})) {
    if (name === 'token' || allowed.includes(name)) continue;
    throw invalidArgument(
      `unknown query parameter ${JSON.stringify(name)}${didYouMean(name, allowed)}; ${route} takes ${
        allowed.length === 0 ? 'none' : allowed.join(', ')
      }`,
    );
  }
}

/** 404 unless a node has recorded the job in this store. */
export async function requireJob(store: Store, name: string): Promise<void> {
  if ((await store.get(keys.job(name))) === null)
    throw new HttpError(404, 'NOT_FOUND', `no job named ${JSON.stringify(name)} is recorded in this store`);
}

/**
 * 409 when no live node defines the job: a trigger request would wait unrun until one does (or
 * expire). Pause and resume need no live node (they apply whenever one comes).
 */
export async function requireLiveNode(store: Store, name: string): Promise<void> {
  if ((await liveNodesOf(store, name)).length === 0)
    throw new HttpError(
      409,
      'NO_LIVE_NODE',
      `no live node defines job ${JSON.stringify(name)}, so nothing would run it now; start a node that defines it (scheduler.define and start, or oncely run) and trigger again`,
    );
}

export type Action = 'trigger' | 'pause' | 'resume';
export const ACTIONS: readonly Action[] = ['trigger', 'pause', 'resume'];

export async function runAction(scheduler: Scheduler, action: Action, job: string): Promise<void> {
  if (action === 'trigger') await scheduler.trigger(job);
  else if (action === 'pause') await scheduler.pause(job);
  else await scheduler.resume(job);
}

/**
 * The CSRF rules of a POST. It needs a proof that a page of another site could not have made the
 * browser send:
 * - `Authorization: Bearer` (a browser sends it cross-origin only after a CORS preflight, and this
 *   server answers no preflight): passes;
 * - otherwise no Sec-Fetch-Site/Origin/Referer may name another site (`Origin: null` proves
 *   nothing), and
 *   - a form post needs the CSRF token (the `csrf` field, or the header), always;
 *   - an API post needs the CSRF token (`X-CSRF-Token` header or `csrf` field), or — only without a
 *     dashboard token, where there is no credential to send — `Content-Type: application/json`,
 *     which a cross-site form or `no-cors` fetch cannot send (it too needs a preflight).
 */
export function checkPost(req: FastifyRequest, auth: Auth, form: boolean): void {
  const via = authVia.get(req) ?? 'none';
  if (via === 'bearer') return;
  const header = (name: string) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const reason = crossSiteReason({
    host: header('host'),
    origin: header('origin'),
    referer: header('referer'),
    secFetchSite: header('sec-fetch-site'),
  });
  if (reason) throw new HttpError(403, 'FORBIDDEN', reason);
  const body = req.body as Record<string, unknown> | undefined;
  const given = header(CSRF_HEADER) ?? (body && typeof body === 'object' ? body[CSRF_FIELD] : undefined);
  if (auth.csrfMatches(given)) return;
  if (!form && via === 'none' && isJson(header('content-type'))) return;
  throw new HttpError(
    403,
    'FORBIDDEN',
    form
      ? `missing or invalid CSRF token: post the "${CSRF_FIELD}" form field of a dashboard page`
      : via === 'none'
        ? `missing CSRF proof: send Content-Type: application/json (curl -H 'Content-Type: application/json'), or the ${CSRF_HEADER} header of a dashboard page`
        : `missing or invalid CSRF token: send the ${CSRF_HEADER} header of a dashboard page, or authenticate with Authorization: Bearer`,
  );
}

/** Whether a Content-Type's media type is exactly `application/json` (parameters aside). */
function isJson(contentType: string | undefined): boolean {
  return contentType?.split(';')[0]?.trim().toLowerCase() === 'application/json';
}

/** JSON API or browser page? */
export function wantsJson(req: FastifyRequest): boolean {
  const path = req.url.split('?')[0] ?? '';
  return path.startsWith('/api/') || path === '/api' || path === '/metrics';
}

export function sendJsonError(reply: FastifyReply, status: number, code: string, message: string): void {
  void reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send({ statusCode: status, code, error: STATUS_TEXT[status] ?? 'Error', message });
}

export const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};
