import type { FastifyInstance, FastifyReply } from 'fastify';
import { validateJobName } from '../../scheduler/job-options.js';
import type { HistoryEntry } from '../../scheduler/types.js';
import {
  ACTIONS,
  type Action,
  checkPost,
  checkQuery,
  type Deps,
  HttpError,
  MAX_AUDIT_LIMIT,
  MAX_HISTORY_LIMIT,
  parseBefore,
  parseLimit,
  parseRefresh,
  queryString,
  requireJob,
  requireLiveNode,
  runAction,
  SCHEDULES_PAGE,
} from '../context.js';
import { type Html, html, jobPath, layout } from '../html.js';
import { localPath, withParams } from '../redirect.js';
import { readScheduleRows } from '../schedule-rows.js';
import { scheduleViews } from '../schedule-view.js';
import { leaseViews } from '../views.js';
import { auditPage } from './audit.js';
import { jobPage } from './job.js';
import { jobsPage } from './jobs.js';
import { locksPage } from './locks.js';
import { nodesPage } from './nodes.js';

/** Run counts on the jobs page are taken over this many history records per job. */
const COUNT_WINDOW = 100;

const NOTICES: Record<Action, (job: string) => Html> = {
  trigger: (job) =>
    html`Trigger requested for <b>${job}</b>: a node that defines it runs it within a poll interval.`,
  pause: (job) => html`Paused <b>${job}</b> on every node.`,
  resume: (job) => html`Resumed <b>${job}</b>; what fell due while paused follows its misfire policy.`,
};

function notice(query: unknown): Html | undefined {
  const q = query as Record<string, unknown>;
  const done = q['done'];
  const job = q['job'];
  if (typeof done !== 'string' || typeof job !== 'string' || !(ACTIONS as readonly string[]).includes(done))
    return undefined;
  return NOTICES[done as Action](job);
}

/** The HTML pages and the form actions they post to. */
export function registerPages(app: FastifyInstance, deps: Deps): void {
  const { scheduler, store } = deps;
  const send = (reply: FastifyReply, page: string, status = 200) =>
    reply.code(status).type('text/html; charset=utf-8').send(page);
  const ctx = async () => ({ csrf: deps.auth.csrfToken, now: await store.now() });

  app.get('/', async (req, reply) => {
    const refresh = parseRefresh(queryString(req.query, 'refresh'));
    const [jobs, c] = await Promise.all([scheduler.jobs({ nextCount: 3 }), ctx()]);
    // Stored schedules per job: one count each (there may be millions; none is read).
    const stored = new Map<string, number>(
      await Promise.all(
        jobs.map(async (j) => [j.name, await scheduler.schedules.count({ job: j.name })] as const),
      ),
    );
    const recent = new Map<string, HistoryEntry[]>(
      await Promise.all(
        jobs.map(
          async (j) => [j.name, await scheduler.history({ job: j.name, limit: COUNT_WINDOW })] as const,
        ),
      ),
    );
    const body = jobsPage({ jobs, recent, stored, window: COUNT_WINDOW }, c);
    const n = notice(req.query);
    return send(
      reply,
      layout({
        title: 'Jobs',
        active: 'jobs',
        body,
        storeKind: store.kind,
        now: c.now,
        ...(refresh && { refresh }),
        ...(n && { notice: n }),
      }),
    );
  });

  app.get<{ Params: { name: string } }>('/jobs/:name', async (req, reply) => {
    const name = req.params.name;
    validateJobName(name);
    const refresh = parseRefresh(queryString(req.query, 'refresh'));
    const limit = parseLimit(queryString(req.query, 'limit'), 50, MAX_HISTORY_LIMIT);
    const before = parseBefore(queryString(req.query, 'before'));
    // The stored-schedules section pages on its own cursor: one page and one count, never all.
    const afterParam = queryString(req.query, 'after');
    const after = afterParam === '' ? undefined : afterParam;
    const [jobs, history, page, count, c, nextStarts] = await Promise.all([
      scheduler.jobs({ nextCount: 5 }),
      scheduler.history({ job: name, limit, ...(before !== undefined && { before }) }),
      readScheduleRows(store, { job: name, limit: SCHEDULES_PAGE, after }),
      scheduler.schedules.count({ job: name }),
      ctx(),
      // What will really start (scheduler.next: jitter, start/end, exclusions, pause applied);
      // none for a job no node records.
      scheduler
        .next(name, { count: 5 })
        .catch(() => undefined),
    ]);
    const schedules = { job: name, views: scheduleViews(page, c.now), count, limit: SCHEDULES_PAGE, after };
    const info = jobs.find((j) => j.name === name);
    if (!info && history.length === 0 && count === 0 && before === undefined)
      throw new HttpError(404, 'NOT_FOUND', `no job named ${JSON.stringify(name)} is recorded in this store`);
    const n = notice(req.query);
    return send(
      reply,
      layout({
        title: name,
        active: 'job',
        body: jobPage({ name, info, history, limit, paged: before !== undefined, schedules, nextStarts }, c),
        storeKind: store.kind,
        now: c.now,
        ...(refresh && { refresh }),
        ...(n && { notice: n }),
      }),
    );
  });

  app.get('/nodes', async (req, reply) => {
    const refresh = parseRefresh(queryString(req.query, 'refresh'));
    const [nodes, c] = await Promise.all([scheduler.nodes(), ctx()]);
    return send(
      reply,
      layout({
        title: 'Nodes',
        active: 'nodes',
        body: nodesPage(nodes, c),
        storeKind: store.kind,
        now: c.now,
        ...(refresh && { refresh }),
      }),
    );
  });

  app.get('/audit', async (req, reply) => {
    checkQuery(req.query, '/audit', ['job', 'schedule', 'after', 'limit', 'refresh']);
    const refresh = parseRefresh(queryString(req.query, 'refresh'));
    const limit = parseLimit(queryString(req.query, 'limit'), 50, MAX_AUDIT_LIMIT);
    const job = queryString(req.query, 'job') || undefined;
    const scheduleId = queryString(req.query, 'schedule') || undefined;
    const after = queryString(req.query, 'after') || undefined;
    const [entries, c] = await Promise.all([
      scheduler.audit({
        limit,
        ...(job !== undefined && { job }),
        ...(scheduleId !== undefined && { scheduleId }),
        ...(after !== undefined && { after }),
      }),
      ctx(),
    ]);
    return send(
      reply,
      layout({
        title: 'Audit trail',
        active: 'audit',
        body: auditPage({ entries, job, scheduleId, after, limit }, c),
        storeKind: store.kind,
        now: c.now,
        ...(refresh && { refresh }),
      }),
    );
  });

  app.get('/locks', async (req, reply) => {
    const refresh = parseRefresh(queryString(req.query, 'refresh'));
    const limit = parseLimit(queryString(req.query, 'limit'), 1000);
    const holds = queryString(req.query, 'holds');
    const [leases, c] = await Promise.all([leaseViews(store, limit), ctx()]);
    return send(
      reply,
      layout({
        title: 'Locks',
        active: 'locks',
        body: locksPage(leases, limit, holds === '1' || holds === 'true', c),
        storeKind: store.kind,
        now: c.now,
        ...(refresh && { refresh }),
      }),
    );
  });

  // Form actions: POST only, CSRF token always; answered with a redirect back (post/redirect/get).
  for (const action of ACTIONS) {
    app.post<{ Params: { name: string } }>(`/jobs/:name/${action}`, async (req, reply) => {
      checkPost(req, deps.auth, true);
      const job = req.params.name;
      validateJobName(job);
      await requireJob(store, job);
      if (action === 'trigger') await requireLiveNode(store, job);
      await runAction(scheduler, action, job);
      const body = req.body as Record<string, unknown> | undefined;
      const back = localPath(body?.['return'], jobPath(job));
      return reply.redirect(withParams(back, { done: action, job }), 303);
    });
  }
}
