import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { jobOfKey, keys } from '../scheduler/keys.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { SchedulerEvents } from '../scheduler/types.js';
import type { Store } from '../store/types.js';

/**
 * `/metrics`: a Registry of the dashboard's own (never prom-client's global one, so an app that
 * embeds the dashboard keeps its own metrics apart).
 *
 * Two sources:
 * - **Scheduler events** (counters, the lateness histogram): only when a scheduler runs in this
 *   process and was passed to `startDashboard` (`oncely run --dashboard`). They count what this
 *   node did, from the moment the dashboard started; sum over nodes in Prometheus.
 * - **Store reads at scrape time** (gauges): cluster-wide, from any dashboard.
 */
export class DashboardMetrics {
  readonly registry = new Registry();
  private readonly runs = new Counter({
    name: 'oncely_runs_total',
    help: 'Finished runs on this node by job and status (succeeded, failed, timed-out, skipped).',
    labelNames: ['job', 'status'] as const,
    registers: [this.registry],
  });
  private readonly failures = new Counter({
    name: 'oncely_run_failures_total',
    help: 'Failed or timed-out runs on this node, by job (retries included).',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });
  private readonly lateness = new Histogram({
    name: 'oncely_start_lateness_seconds',
    help: 'Seconds from an occurrence fire time to its handler start on this node (store clock).',
    labelNames: ['job'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });
  private readonly acquisitions = new Counter({
    name: 'oncely_lock_acquisitions_total',
    help: 'Occurrence claims this node acquired and started a run under, by job.',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });
  private readonly storeErrors = new Counter({
    name: 'oncely_store_errors_total',
    help: "Errors the scheduler on this node reported ('error' events: store calls that failed).",
    registers: [this.registry],
  });
  private readonly jobs = this.gauge('oncely_jobs', 'Jobs recorded in the store.');
  private readonly paused = this.gauge('oncely_jobs_paused', 'Recorded jobs that are paused.');
  private readonly nodes = this.gauge('oncely_nodes', 'Live nodes (heartbeat not expired).');
  private readonly leases = this.gauge(
    'oncely_leases_held',
    'Unexpired leases: running claims, overlap gates, locks, and the "done" holds of finished occurrences.',
  );
  private readonly inflight = this.gauge(
    'oncely_runs_in_progress',
    'Runs claimed and not finished, cluster-wide.',
  );
  private readonly storeUp = this.gauge(
    'oncely_store_up',
    '1 when the last scrape could read the store, 0 when it could not (the gauges above then keep their last values).',
  );
  private detach: (() => void) | undefined;

  constructor(private readonly store: Store) {}

  private gauge(name: string, help: string): Gauge {
    return new Gauge({ name, help, registers: [this.registry] });
  }

  /** Feeds the event metrics from a scheduler running in this process. */
  attach(scheduler: Scheduler): void {
    this.detach?.();
    const started = (e: SchedulerEvents['started']) => {
      this.acquisitions.inc({ job: e.job });
      const late = (e.startedAt.getTime() - e.fireTime.getTime()) / 1000;
      this.lateness.observe({ job: e.job }, Math.max(0, late));
    };
    const succeeded = (e: SchedulerEvents['succeeded']) => this.runs.inc({ job: e.job, status: 'succeeded' });
    const failed = (e: SchedulerEvents['failed']) => {
      this.runs.inc({ job: e.job, status: e.status });
      this.failures.inc({ job: e.job });
    };
    const skipped = (e: SchedulerEvents['skipped']) => this.runs.inc({ job: e.job, status: 'skipped' });
    const error = () => this.storeErrors.inc();
    scheduler.on('started', started);
    scheduler.on('succeeded', succeeded);
    scheduler.on('failed', failed);
    scheduler.on('skipped', skipped);
    scheduler.on('error', error);
    this.detach = () => {
      scheduler.off('started', started);
      scheduler.off('succeeded', succeeded);
      scheduler.off('failed', failed);
      scheduler.off('skipped', skipped);
      scheduler.off('error', error);
    };
  }

  close(): void {
    this.detach?.();
    this.detach = undefined;
  }

  /** Reads the gauges from the store, then renders the exposition text. */
  async scrape(): Promise<string> {
    try {
      const [jobs, pauses, nodes, leases, inflight] = await Promise.all([
        this.store.scan(keys.jobPrefix, { limit: 10_000 }),
        this.store.scan(keys.pausePrefix, { limit: 10_000 }),
        this.store.scan(keys.nodePrefix, { limit: 10_000 }),
        this.store.listLeases({ limit: 10_000 }),
        this.store.scan(keys.inflightPrefix(), { limit: 10_000 }),
      ]);
      const known = new Set(jobs.map((r) => jobOfKey(r.key)));
      this.jobs.set(known.size);
      this.paused.set(pauses.filter((r) => known.has(jobOfKey(r.key))).length);
      this.nodes.set(nodes.length);
      this.leases.set(leases.length);
      this.inflight.set(inflight.length);
      this.storeUp.set(1);
    } catch {
      this.storeUp.set(0);
    }
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
