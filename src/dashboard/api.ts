import type { FastifyInstance } from 'fastify';
import { invalidArgument } from '../core/errors.js';
import { validateJobName } from '../scheduler/job-options.js';
import { historyCursor } from '../scheduler/observe/history-query.js';
import {
  ACTIONS,
  type Action,
  checkPost,
  checkQuery,
  type Deps,
  HttpError,
  MAX_AUDIT_LIMIT,
  MAX_HISTORY_LIMIT,
  MAX_SCHEDULES_LIMIT,
  parseBefore,
  parseLimit,
  queryString,
  requireJob,
  requireLiveNode,
  runAction,
} from './context.js';
import { readScheduleRows } from './schedule-rows.js';
import { scheduleJson, scheduleViews } from './schedule-view.js';
import { historyJson, jobJson, leaseJson, leaseViews, nodeJson } from './views.js';

/**
 * The JSON API (a contract: external tests use it). Dates are ISO-8601 strings.
 *
 *   GET  /api/jobs                       [{ name, trigger, paused, nextFireTimes, lastRun, options, nodes, live, updatedAt }]
 *                                        `live: false`: no live node defines the job, nothing runs it
 *                                        (`nextFireTimes` are then when it would fire)
 *   GET  /api/history?job=&limit=&before=  [{ job, fireTime, node, attempt, token, source, status, startedAt, … }]
 *                                        newest first; limit ≤ 500; a full page has `Link: <…>; rel="next"`
 *   GET  /api/schedules?job=&after=&limit=  [{ id, job, trigger, timezone?, nextFireTime, data, dataTruncated?, dataPreview?, dataLength?, pause? }]
 *                                        ascending by id; limit ≤ 500; a full page has `Link: <…>; rel="next"`;
 *                                        data whose JSON is over 4,096 characters: `data: null`, `dataTruncated: true`,
 *                                        its first 200 characters as `dataPreview`, `dataLength` (schedule-rows.ts)
 *   GET  /api/schedule?id=               { id, job, trigger, timezone?, nextFireTime, data } — one schedule, whole; 404 if none
 *   GET  /api/schedules/count?job=       { count, job? }
 *   GET  /api/audit?job=&schedule=&after=&limit=  [{ id, at, actor, action, target, job?, scheduleId?, before?, after?, note? }]
 *                                        newest first; limit ≤ 1,000; a full page has `Link: <…>; rel="next"`
 *   GET  /api/nodes                      [{ id, host, pid, version, startedAt, lastSeen }]
 *   GET  /api/locks?limit=               [{ key, owner, token, acquiredAt, expiresAt, kind, name?, state? }]
 *   POST /api/jobs/:name/trigger         202 { ok, job, action }; 409 NO_LIVE_NODE when no live node defines it
 *   POST /api/jobs/:name/pause|resume    200 { ok, job, action, paused }
 *
 * Errors: `{ statusCode, code, error, message }` — 400 bad query (an unknown parameter too) or
 * body, 401 no/wrong token, 403 CSRF, 404 unknown job, 405 wrong method (with Allow), 409 trigger
 * of a job no live node defines, 413 body over 64 KiB, 415 neither JSON nor a form, 429 too many
 * wrong tokens (with Retry-After).
 */
export function registerApi(app: FastifyInstance, deps: Deps): void {
  const { scheduler, store } = deps;

  app.get('/api/jobs', async (req) => {
    checkQuery(req.query, '/api/jobs', []);
    return (await scheduler.jobs()).map(jobJson);
  });

  app.get('/api/history', async (req, reply) => {
    checkQuery(req.query, '/api/history', ['job', 'limit', 'before']);
    const job = queryString(req.query, 'job');
    const limit = parseLimit(queryString(req.query, 'limit'), 100, MAX_HISTORY_LIMIT);
    const before = parseBefore(queryString(req.query, 'before'));
    if (job !== undefined && job !== '') validateJobName(job);
    const history = await scheduler.history({
      ...(job !== undefined && job !== '' && { job }),
      ...(before !== undefined && { before }),
      limit,
    });
    // A full page may have a next one: its URL, with the cursor of this page's last entry.
    const last = history.length === limit ? history.at(-1) : undefined;
    if (last) {
      const next = new URLSearchParams({
        ...(job !== undefined && job !== '' && { job }),
        limit: String(limit),
        before: historyCursor(last),
      });
      void reply.header('Link', `</api/history?${next}>; rel="next"`);
    }
    return history.map(historyJson);
  });

  // Stored schedules: one page (one scan, plus one getMany with `job`), never all of them.
  app.get('/api/schedules', async (req, reply) => {
    checkQuery(req.query, '/api/schedules', ['job', 'after', 'limit']);
    const job = nonEmpty(queryString(req.query, 'job'));
    const after = nonEmpty(queryString(req.query, 'after'));
    const limit = parseLimit(queryString(req.query, 'limit'), 100, MAX_SCHEDULES_LIMIT);
    const [page, now] = await Promise.all([readScheduleRows(store, { limit, job, after }), store.now()]);
    const last = page.length === limit ? page.at(-1) : undefined;
    if (last) {
      const next = new URLSearchParams({
        ...(job !== undefined && { job }),
        limit: String(limit),
        after: last.schedule.id,
      });
      void reply.header('Link', `</api/schedules?${next}>; rel="next"`);
    }
    return scheduleViews(page, now).map(scheduleJson);
  });

  // One stored schedule, whole (`data` too, however large: one record per request).
  app.get('/api/schedule', async (req) => {
    checkQuery(req.query, '/api/schedule', ['id']);
    const id = queryString(req.query, 'id');
    if (id === undefined) throw invalidArgument('/api/schedule needs ?id=<schedule id>');
    const [schedule, now] = await Promise.all([scheduler.schedules.get(id), store.now()]);
    if (!schedule)
      throw new HttpError(404, 'NOT_FOUND', `no stored schedule has the id ${JSON.stringify(id)}`);
    return scheduleJson(scheduleViews([{ schedule }], now)[0]!);
  });

  app.get('/api/schedules/count', async (req) => {
    checkQuery(req.query, '/api/schedules/count', ['job']);
    const job = nonEmpty(queryString(req.query, 'job'));
    const count = await scheduler.schedules.count(job !== undefined ? { job } : {});
    return { count, ...(job !== undefined && { job }) };
  });

  app.get('/api/audit', async (req, reply) => {
    checkQuery(req.query, '/api/audit', ['job', 'schedule', 'after', 'limit']);
    const filter = {
      job: queryString(req.query, 'job') || undefined,
      schedule: queryString(req.query, 'schedule') || undefined,
    };
    const limit = parseLimit(queryString(req.query, 'limit'), 100, MAX_AUDIT_LIMIT);
    const after = queryString(req.query, 'after') || undefined;
    const entries = await scheduler.audit({
      limit,
      ...(filter.job !== undefined && { job: filter.job }),
      ...(filter.schedule !== undefined && { scheduleId: filter.schedule }),
      ...(after !== undefined && { after }),
    });
    const last = entries.length === limit ? entries.at(-1) : undefined;
    if (last) {
      const next = new URLSearchParams({
        ...(filter.job !== undefined && { job: filter.job }),
        ...(filter.schedule !== undefined && { schedule: filter.schedule }),
        limit: String(limit),
        after: last.id,
      });
      void reply.header('Link', `</api/audit?${next}>; rel="next"`);
    }
    return entries.map((e) => ({ ...e, at: e.at.toISOString() }));
  });

  app.get('/api/nodes', async (req) => {
    checkQuery(req.query, '/api/nodes', []);
    return (await scheduler.nodes()).map(nodeJson);
  });

  app.get('/api/locks', async (req) => {
    checkQuery(req.query, '/api/locks', ['limit']);
    const limit = parseLimit(queryString(req.query, 'limit'), 1000);
    return (await leaseViews(store, limit)).map(leaseJson);
  });

  for (const action of ACTIONS) {
    app.post<{ Params: { name: string } }>(`/api/jobs/:name/${action}`, async (req, reply) => {
      checkPost(req, deps.auth, false);
      const job = req.params.name;
      validateJobName(job);
      await requireJob(store, job);
      if (action === 'trigger') await requireLiveNode(store, job);
      await runAction(scheduler, action as Action, job);
      if (action === 'trigger') return reply.code(202).send({ ok: true, job, action });
      return { ok: true, job, action, paused: action === 'pause' };
    });
  }
}

/** An absent or empty query parameter is none. */
function nonEmpty(value: string | undefined): string | undefined {
  return value === '' ? undefined : value;
}
