/**
 * The scheduler's own observability (issue 10 item 5), on a memory store with a real
 * OpenTelemetry SDK (in-memory exporter), a real pino logger and prom-client:
 * - spans: `oncely.claim` per acquire, `oncely.run` per attempt (attributes, link to its claim,
 *   ERROR + exception on failure, active while the handler runs), `oncely.finish` as its child;
 * - logs: pino gets JSON records with the run's fields; a console-like logger gets (message, fields);
 * - metrics: `scheduler.metrics()` and a `registry` option see the counters move;
 * - without `@opentelemetry/api` installed (hidden from a child process), oncely still runs.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { context, SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createScheduler,
  OncelyError,
  openStore,
  type Scheduler,
  type SchedulerEvents,
} from '../src/index.js';
import { ROOT, requireBuiltCli } from './fixtures/cli/cli.js';
import { testPrefix } from './harness/backends.js';

const contextManager = new AsyncLocalStorageContextManager().enable();
beforeAll(() => {
  context.setGlobalContextManager(contextManager);
});
afterAll(() => {
  context.disable();
});

/** Resolves with the first `count` events of a kind (in order). */
function collect<K extends keyof SchedulerEvents>(
  scheduler: Scheduler,
  event: K,
  count: number,
  where: (e: SchedulerEvents[K]) => boolean = () => true,
): Promise<SchedulerEvents[K][]> {
  const seen: SchedulerEvents[K][] = [];
  return new Promise((resolve) => {
    const listener = (e: SchedulerEvents[K]) => {
      if (!where(e)) return;
      seen.push(e);
      if (seen.length === count) {
        scheduler.off(event, listener);
        resolve(seen);
      }
    };
    scheduler.on(event, listener);
  });
}

async function newScheduler(options: Omit<Parameters<typeof createScheduler>[0], 'store'> = {}) {
  const store = await openStore(`memory:${testPrefix('obs')}`);
  return createScheduler({ store, pollInterval: '100ms', ...options });
}

describe('OpenTelemetry spans', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const user = provider.getTracer('app');
  let spans: ReadableSpan[] = [];
  let ticks: SchedulerEvents['succeeded'][] = [];
  let failure: SchedulerEvents['failed'] | undefined;
  let userSpanIds: { traceId: string; parentSpanId: string | undefined }[] = [];

  beforeAll(async () => {
    const scheduler = await newScheduler({ tracer: provider.getTracer('oncely-test'), node: 'traced' });
    scheduler.define('tick', { every: '150ms' }, async () => {
      // The application's own span: a child of the run span (the active one).
      const span = user.startSpan('app.work');
      userSpanIds.push({ traceId: span.spanContext().traceId, parentSpanId: undefined });
      span.end();
    });
    scheduler.define('sharded', { every: '150ms', shards: 2 }, async () => {});
    scheduler.define('boom', {}, async () => {
      throw new Error('boom: the handler failed');
    });
    const succeeded = collect(scheduler, 'succeeded', 3, (e) => e.job === 'tick');
    const shardsDone = collect(scheduler, 'succeeded', 2, (e) => e.job === 'sharded');
    const failed = collect(scheduler, 'failed', 2);
    await scheduler.start();
    await scheduler.schedules.upsert({ id: 'boom-1', job: 'boom', at: new Date(Date.now() + 300) });
    await scheduler.trigger('boom');
    try {
      ticks = await succeeded;
      await shardsDone;
      [failure] = await failed;
    } finally {
      await scheduler.stop();
      await provider.forceFlush();
    }
    spans = exporter.getFinishedSpans();
    userSpanIds = spans
      .filter((s) => s.name === 'app.work')
      .map((s) => ({ traceId: s.spanContext().traceId, parentSpanId: s.parentSpanContext?.spanId }));
  });

  it('has an oncely.run span per attempt with the occurrence as attributes, linked to its oncely.claim span', () => {
    const claims = spans.filter((s) => s.name === 'oncely.claim');
    expect(claims.length).toBeGreaterThan(0);
    for (const c of claims) {
      expect(c.attributes['oncely.node']).toBe('traced');
      expect(c.attributes['oncely.claim.count']).toBeGreaterThanOrEqual(1);
      expect(c.parentSpanContext).toBeUndefined();
    }
    expect(claims.reduce((n, c) => n + Number(c.attributes['oncely.claim.won']), 0)).toBeGreaterThanOrEqual(
      4,
    );
    const claimIds = new Set(claims.map((c) => c.spanContext().spanId));
    for (const tick of ticks) {
      const fireTime = tick.fireTime.toISOString();
      const run = spans.find(
        (s) =>
          s.name === 'oncely.run' &&
          s.attributes['oncely.job'] === 'tick' &&
          s.attributes['oncely.fire_time'] === fireTime,
      );
      expect(run, `run span of tick at ${fireTime}`).toBeDefined();
      expect(run!.attributes).toMatchObject({
        'oncely.node': 'traced',
        'oncely.attempt': 1,
        'oncely.token': tick.token,
        'oncely.source': 'schedule',
        'oncely.status': 'succeeded',
      });
      expect(run!.status.code).not.toBe(SpanStatusCode.ERROR);
      expect(run!.parentSpanContext).toBeUndefined();
      expect(run!.links).toHaveLength(1);
      expect(claimIds.has(run!.links[0]!.context.spanId)).toBe(true);
      // Its finish, a child of the run span.
      const finish = spans.find(
        (s) => s.name === 'oncely.finish' && s.parentSpanContext?.spanId === run!.spanContext().spanId,
      );
      expect(finish?.attributes).toMatchObject({
        'oncely.status': 'succeeded',
        'oncely.finish.stored': true,
      });
    }
    const shards = spans
      .filter((s) => s.name === 'oncely.run' && s.attributes['oncely.job'] === 'sharded')
      .map((s) => s.attributes['oncely.shard']);
    expect(new Set(shards)).toEqual(new Set([0, 1]));
  });

  it('marks a failed run ERROR with an exception event and the schedule id', () => {
    expect(failure).toBeDefined();
    const run = spans.find(
      (s) =>
        s.name === 'oncely.run' &&
        s.attributes['oncely.job'] === 'boom' &&
        s.attributes['oncely.status'] === 'failed',
    );
    expect(run).toBeDefined();
    expect(run!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'boom: the handler failed' });
    const exception = run!.events.find((e) => e.name === 'exception');
    expect(exception?.attributes?.['exception.message']).toBe('boom: the handler failed');
    expect(run!.attributes['oncely.source']).toBe(failure!.source);
    const scheduled = spans.find(
      (s) => s.name === 'oncely.run' && s.attributes['oncely.schedule_id'] === 'boom-1',
    );
    expect(scheduled?.attributes).toMatchObject({ 'oncely.job': 'boom', 'oncely.status': 'failed' });
  });

  it("makes the run span the parent of the handler's own spans", () => {
    const runs = new Map(
      spans
        .filter((s) => s.name === 'oncely.run')
        .map((s) => [s.spanContext().spanId, s.spanContext().traceId]),
    );
    expect(userSpanIds.length).toBeGreaterThanOrEqual(3);
    for (const u of userSpanIds) {
      expect(u.parentSpanId, 'the app span has a parent').toBeDefined();
      expect(runs.get(u.parentSpanId!)).toBe(u.traceId);
    }
  });
});

describe('logger', () => {
  it('gives pino structured records: JSON lines with the run fields', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const logger = pino({ level: 'debug' }, stream);
    const scheduler = await newScheduler({ logger, node: 'logged' });
    scheduler.define('ok', { every: '150ms' }, async () => {});
    scheduler.define('bad', {}, async () => {
      throw new TypeError('bad input');
    });
    const ok = collect(scheduler, 'succeeded', 1);
    const bad = collect(scheduler, 'failed', 1);
    await scheduler.start();
    await scheduler.trigger('bad');
    const [[succeeded], [failed]] = await Promise.all([ok, bad]);
    await scheduler.stop();
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const done = records.find((r) => r.job === 'ok' && r.status === 'succeeded');
    expect(done).toMatchObject({
      level: 30,
      job: 'ok',
      fireTime: succeeded!.fireTime.toISOString(),
      node: 'logged',
      attempt: 1,
      token: succeeded!.token,
      source: 'schedule',
      status: 'succeeded',
    });
    expect(typeof done!.durationMs).toBe('number');
    expect(done!.msg).toBe('oncely: ok succeeded');
    const start = records.find((r) => r.job === 'ok' && r.status === 'running');
    expect(start).toMatchObject({ level: 20, attempt: 1, token: succeeded!.token });
    expect(typeof start!.lateMs).toBe('number');
    const fail = records.find((r) => r.job === 'bad' && r.status === 'failed');
    expect(fail).toMatchObject({
      level: 40,
      node: 'logged',
      source: 'manual',
      token: failed!.token,
      willRetry: false,
      error: 'TypeError: bad input',
    });
    // pino's own error serializer (type, message, stack) under its error key.
    expect(fail!.err).toMatchObject({ type: 'TypeError', message: 'bad input' });
    expect(String((fail!.err as { stack: string }).stack)).toContain('TypeError: bad input');
  });

  it('gives any other logger (message, fields)', async () => {
    const calls: { level: string; args: unknown[] }[] = [];
    const at =
      (level: string) =>
      (...args: unknown[]) =>
        calls.push({ level, args });
    const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
    const scheduler = await newScheduler({ logger });
    scheduler.define('plain', { every: '150ms' }, async () => {});
    const [done] = await (async () => {
      const p = collect(scheduler, 'succeeded', 1);
      await scheduler.start();
      return p;
    })();
    await scheduler.stop();
    const info = calls.find(
      (c) => c.level === 'info' && (c.args[1] as { status?: string })?.status === 'succeeded',
    );
    expect(info?.args[0]).toBe('oncely: plain succeeded');
    expect(info?.args[1]).toMatchObject({
      job: 'plain',
      token: done!.token,
      fireTime: done!.fireTime.toISOString(),
    });
  });

  it('rejects a logger without the four methods', async () => {
    const store = await openStore('memory:');
    expect(() => createScheduler({ store, logger: { info() {} } as never })).toThrow(OncelyError);
  });
});

describe('metrics', () => {
  /** The value of one sample line of the text exposition (0 when absent). */
  function sample(text: string, line: string): number {
    const found = text.split('\n').find((l) => l.startsWith(`${line} `));
    return found ? Number(found.slice(line.length + 1)) : 0;
  }

  it('a read right after a run started or succeeded counts it (the run counters are summed before they are added)', async () => {
    const registry = new Registry();
    const scheduler = await newScheduler({ registry });
    scheduler.define('now', {}, async () => {});
    const reads: Promise<string>[] = [];
    // Read in the listener itself, in the same synchronous stretch as the count (run-tally.ts).
    scheduler.on('started', () => reads.push(registry.metrics()));
    scheduler.on('succeeded', () => reads.push(scheduler.metrics()));
    const done = collect(scheduler, 'succeeded', 1);
    await scheduler.start();
    await scheduler.trigger('now');
    await done;
    await scheduler.stop();
    const [atStart, atEnd] = await Promise.all(reads);
    expect(sample(atStart!, 'oncely_runs_started_total{job="now",source="manual"}')).toBe(1);
    expect(sample(atStart!, 'oncely_lock_acquisitions_total{job="now"}')).toBe(1);
    expect(sample(atEnd!, 'oncely_runs_total{job="now",status="succeeded"}')).toBe(1);
  });

  it('counts runs, failures, skips, claims, durations and lateness; registry option shares them', async () => {
    const registry = new Registry();
    const scheduler = await newScheduler({ registry });
    // Each run outlasts the next fire time: overlap 'skip' skips some.
    scheduler.define('slow', { every: '100ms' }, async () => new Promise((r) => setTimeout(r, 250)));
    scheduler.define('fail', {}, async () => {
      throw new Error('no');
    });
    const runs = collect(scheduler, 'succeeded', 2, (e) => e.job === 'slow');
    const skipped = collect(scheduler, 'skipped', 1);
    const failed = collect(scheduler, 'failed', 1);
    await scheduler.start();
    await scheduler.trigger('fail');
    await Promise.all([runs, skipped, failed]);
    await scheduler.stop();
    const text = await scheduler.metrics();
    expect(sample(text, 'oncely_runs_total{job="slow",status="succeeded"}')).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'oncely_runs_total{job="slow",status="skipped"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'oncely_runs_total{job="fail",status="failed"}')).toBe(1);
    expect(sample(text, 'oncely_run_failures_total{job="fail"}')).toBe(1);
    expect(sample(text, 'oncely_runs_started_total{job="fail",source="manual"}')).toBe(1);
    expect(sample(text, 'oncely_runs_started_total{job="slow",source="schedule"}')).toBeGreaterThanOrEqual(2);
    const attempted = sample(text, 'oncely_claims_attempted_total{job="slow"}');
    const won = sample(text, 'oncely_claims_won_total{job="slow"}');
    expect(won).toBeGreaterThanOrEqual(3);
    expect(attempted).toBeGreaterThanOrEqual(won);
    expect(
      sample(text, 'oncely_run_duration_seconds_count{job="slow",status="succeeded"}'),
    ).toBeGreaterThanOrEqual(2);
    // A run takes 250 ms: none in the 0.1 s bucket, all of them by 0.5 s.
    expect(sample(text, 'oncely_run_duration_seconds_bucket{le="0.1",job="slow",status="succeeded"}')).toBe(
      0,
    );
    expect(sample(text, 'oncely_start_lateness_seconds_count{job="slow"}')).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'oncely_runs_running')).toBe(0);
    expect(sample(text, 'oncely_store_errors_total')).toBe(0);
    expect(text).toMatch(/^# TYPE oncely_misfires_total counter$/m);
    expect(text).toMatch(/^# TYPE oncely_claims_refused_total counter$/m);
    // The same counters in the app's registry.
    const app = await registry.metrics();
    expect(sample(app, 'oncely_runs_total{job="fail",status="failed"}')).toBe(1);

    // A second scheduler on the same registry shares its metrics instead of failing to register them.
    const second = await newScheduler({ registry });
    second.define('fail', {}, async () => {
      throw new Error('no');
    });
    const again = collect(second, 'failed', 1);
    await second.start();
    await second.trigger('fail');
    await again;
    await second.stop();
    expect(sample(await registry.metrics(), 'oncely_runs_total{job="fail",status="failed"}')).toBe(2);
  });

  it('counts starts and successes when no listener and no logger reads the run events', async () => {
    // Nobody reads 'started'/'succeeded' here, so the scheduler does not build them (events.ts):
    // the metrics must be counted all the same.
    const scheduler = await newScheduler();
    let ran = 0;
    scheduler.define('quiet', {}, () => {
      ran++;
    });
    await scheduler.start();
    await scheduler.trigger('quiet');
    let text = '';
    for (let i = 0; i < 80; i++) {
      text = await scheduler.metrics();
      if (sample(text, 'oncely_runs_total{job="quiet",status="succeeded"}') >= 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await scheduler.stop();
    expect(ran).toBe(1);
    expect(sample(text, 'oncely_runs_total{job="quiet",status="succeeded"}')).toBe(1);
    expect(sample(text, 'oncely_runs_started_total{job="quiet",source="manual"}')).toBe(1);
    expect(sample(text, 'oncely_lock_acquisitions_total{job="quiet"}')).toBe(1);
    expect(sample(text, 'oncely_start_lateness_seconds_count{job="quiet"}')).toBe(1);
    expect(sample(text, 'oncely_run_duration_seconds_count{job="quiet",status="succeeded"}')).toBe(1);
  });

  it('shows the running gauge while a handler runs', async () => {
    const scheduler = await newScheduler();
    let release = () => {};
    const running = new Promise<void>((r) => {
      release = r;
    });
    scheduler.define('hold', {}, async () => running);
    const started = collect(scheduler, 'started', 1);
    await scheduler.start();
    await scheduler.trigger('hold');
    await started;
    expect(sample(await scheduler.metrics(), 'oncely_runs_running')).toBe(1);
    release();
    await scheduler.stop();
    expect(sample(await scheduler.metrics(), 'oncely_runs_running')).toBe(0);
  });
});

describe('without @opentelemetry/api installed', () => {
  // prom-client (a dependency) depends on @opentelemetry/api itself, so npm always installs it; but
  // a strict layout (pnpm) lets only prom-client resolve it, not oncely, when the app did not add
  // the optional peer. That is the case simulated here: the built package's own require fails.
  it('runs jobs when oncely cannot resolve it (built package); a tracer option says what to install', () => {
    requireBuiltCli();
    const dist = join(ROOT, 'dist');
    const hide = `
      const Module = require('node:module');
      const resolve = Module._resolveFilename;
      Module._resolveFilename = function (request, parent, ...rest) {
        const fromOncely = (parent?.filename ?? '').startsWith(${JSON.stringify(dist)});
        if (fromOncely && (request === '@opentelemetry/api' || request.startsWith('@opentelemetry/api/'))) {
          const err = new Error("Cannot find module '" + request + "'");
          err.code = 'MODULE_NOT_FOUND';
          throw err;
        }
        return resolve.call(this, request, parent, ...rest);
      };`;
    const program = `
      import { createRequire } from 'node:module';
      import { createScheduler, openStore } from './dist/index.js';
      let hidden = false;
      try { createRequire(new URL('./dist/core/otel.js', import.meta.url))('@opentelemetry/api'); } catch { hidden = true; }
      const store = await openStore('memory:');
      const scheduler = createScheduler({ store, pollInterval: '100ms' });
      let tracerError = '';
      try { createScheduler({ store, tracer: { startSpan() {} } }); } catch (e) { tracerError = e.code + ' ' + e.message; }
      const done = new Promise((resolve) => scheduler.once('succeeded', resolve));
      scheduler.define('job', {}, async () => {});
      await scheduler.start();
      await scheduler.trigger('job');
      await done;
      await scheduler.stop();
      const metrics = await scheduler.metrics();
      console.log(JSON.stringify({ hidden, tracerError, ran: /oncely_runs_total\\{job="job",status="succeeded"\\} 1/.test(metrics) }));
    `;
    const dir = mkdtempSync(join(tmpdir(), 'oncely-no-otel-'));
    const preload = join(dir, 'hide-otel.cjs');
    writeFileSync(preload, hide);
    const r = spawnSync(process.execPath, ['--require', preload, '--input-type=module', '-e', program], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 20_000,
    });
    rmSync(dir, { recursive: true, force: true });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      hidden: true,
      tracerError: expect.stringMatching(
        /^INVALID_ARGUMENT .*'@opentelemetry\/api'.*npm install @opentelemetry\/api/,
      ),
      ran: true,
    });
  });
});
