import {
  consoleWarnings,
  type LogFields,
  type Logger,
  type LogRecord,
  recordWriter,
  silentLogger,
} from '../../core/logger.js';
import type { RunEvent, RunSource, SchedulerEvents, SchedulerOptions } from '../types.js';
import { SchedulerMetrics } from './metrics.js';
import { RunTally } from './run-tally.js';
import { skipText } from './skip-text.js';
import { Tracing } from './tracing.js';

type Observed = { [K in keyof SchedulerEvents]: [K, SchedulerEvents[K]] }[keyof SchedulerEvents];

/** A thrown value as one line of text for logs (the error itself goes along for its stack). */
function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** The fields every record about an occurrence's run carries. */
function runFields(e: RunEvent): LogFields {
  return {
    job: e.job,
    fireTime: e.fireTime.toISOString(),
    node: e.node,
    attempt: e.attempt,
    token: e.token,
    source: e.source,
    ...(e.scheduleId !== undefined && { scheduleId: e.scheduleId }),
    ...(e.shard !== undefined && { shard: e.shard }),
  };
}

/**
 * The scheduler's own observability: it sees every event before the listeners do (so nobody can
 * detach it) and turns it into metrics and log records; spans are made by the rooms themselves
 * (`tracing`). Levels: `debug` a run started; `info` a run ended (status in the fields), a fire
 * time skipped for overlap or replayed; `warn` a run failed or timed out, fire times skipped by
 * the misfire policy; `error` a store call failed.
 */
export class Telemetry {
  readonly metrics: SchedulerMetrics;
  private readonly tally: RunTally;
  readonly tracing: Tracing | undefined;
  /**
   * Writes a warn or error record; `undefined` with the silent logger, so that `this.log?.(…)`
   * does not even build the record's fields.
   */
  readonly log: LogRecord | undefined;
  /**
   * Writes a debug or info record (a run started, succeeded, skipped); `undefined` with a logger
   * that drops them anyway (the default `consoleWarnings`, or silence): two records per run add
   * up at 100,000 runs.
   */
  readonly chatter: LogRecord | undefined;

  constructor(
    logger: Logger,
    private readonly node: string,
    options: Pick<SchedulerOptions, 'tracer' | 'registry'>,
  ) {
    this.log = logger === silentLogger ? undefined : recordWriter(logger);
    this.chatter = logger === consoleWarnings ? undefined : this.log;
    this.metrics = new SchedulerMetrics(options.registry);
    this.tally = new RunTally(this.metrics);
    this.tracing = Tracing.create(options.tracer);
  }

  /** Claims asked for (`attempted`) and how they were answered (`won`, `refused`): `count` of them (a page's, at once). */
  claim(job: string, outcome: 'attempted' | 'won' | 'refused', count = 1): void {
    if (count === 0) return;
    const m = this.metrics;
    (outcome === 'attempted' ? m.claimsAttempted : outcome === 'won' ? m.claimsWon : m.claimsRefused).inc(
      { job },
      count,
    );
  }

  /** The metrics of a run's start (its 'started' event logs it, see `observe`); counters summed (run-tally.ts). */
  runStarted(job: string, source: RunSource, lateMs: number): void {
    this.tally.start(job, source);
    this.metrics.lateness.observe({ job }, Math.max(0, lateMs) / 1000);
  }

  /** The metrics of a run that succeeded (its 'succeeded' event logs it, see `observe`); as runStarted. */
  runSucceeded(job: string, durationMs: number): void {
    this.tally.succeed(job);
    this.metrics.duration.observe({ job, status: 'succeeded' }, durationMs / 1000);
  }

  observe(...[event, e]: Observed): void {
    const m = this.metrics;
    switch (event) {
      // A run's start and success are counted by runStarted/runSucceeded, which come first
      // whether or not the event is built (SchedulerEmitter.started/succeeded): here only the log.
      case 'started': {
        const lateMs = Math.max(0, e.startedAt.getTime() - (e.scheduledAt ?? e.fireTime).getTime());
        this.chatter?.('debug', `oncely: ${e.job} started`, { ...runFields(e), status: 'running', lateMs });
        return;
      }
      case 'succeeded':
        this.chatter?.('info', `oncely: ${e.job} succeeded`, {
          ...runFields(e),
          status: 'succeeded',
          durationMs: e.durationMs,
        });
        return;
      case 'failed':
        m.runs.inc({ job: e.job, status: e.status });
        m.failures.inc({ job: e.job });
        m.duration.observe({ job: e.job, status: e.status }, e.durationMs / 1000);
        this.log?.(
          'warn',
          `oncely: ${e.job} ${e.status}${e.willRetry ? ', will retry' : ''}`,
          {
            ...runFields(e),
            status: e.status,
            durationMs: e.durationMs,
            willRetry: e.willRetry,
            error: errorText(e.error),
          },
          e.error,
        );
        return;
      case 'skipped':
        m.runs.inc({ job: e.job, status: 'skipped' });
        this.chatter?.('info', `oncely: ${e.job} skipped (${skipText(e)})`, {
          job: e.job,
          fireTime: e.fireTime.toISOString(),
          node: this.node,
          status: 'skipped',
          reason: e.reason,
          ...(e.by !== undefined && { byFireTime: e.by.fireTime.toISOString() }),
          ...(e.by?.node !== undefined && { byNode: e.by.node }),
          ...(e.by?.token !== undefined && { byToken: e.by.token }),
          ...(e.scheduleId !== undefined && { scheduleId: e.scheduleId }),
          ...(e.shard !== undefined && { shard: e.shard }),
        });
        return;
      case 'misfired':
        m.misfires.inc({ job: e.job, action: e.action }, e.count ?? 1);
        (e.action === 'run' ? this.chatter : this.log)?.(
          e.action === 'run' ? 'info' : 'warn',
          e.action === 'run'
            ? `oncely: ${e.job} replays a missed fire time`
            : `oncely: ${e.job} skips missed fire times`,
          {
            job: e.job,
            fireTime: e.fireTime.toISOString(),
            firstFireTime: e.firstFireTime.toISOString(),
            node: this.node,
            action: e.action,
            ...(e.count !== undefined && { count: e.count }),
            ...(e.scheduleId !== undefined && { scheduleId: e.scheduleId }),
          },
        );
        return;
      case 'error':
        m.storeErrors.inc();
        this.log?.(
          'error',
          `oncely scheduler ${this.node}: ${e.during} failed`,
          { node: this.node, during: e.during, error: errorText(e.error) },
          e.error,
        );
        return;
    }
  }
}
