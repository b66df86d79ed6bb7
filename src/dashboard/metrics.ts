import { Gauge, Registry } from 'prom-client';
import { decodePageRecord, runningOfPage } from '../scheduler/claim/page-record.js';
import { jobOfKey, keys } from '../scheduler/keys.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { Store } from '../store/types.js';

/**
 * `/metrics`: a Registry of the dashboard's own (never prom-client's global one, so an app that
 * embeds the dashboard keeps its own metrics apart).
 *
 * Two sources:
 * - **The scheduler's own metrics** (`scheduler.metrics()`: runs, durations, lateness, claims…):
 *   only when a scheduler runs in this process and was passed to `startDashboard`
 *   (`oncely run --dashboard`). They count what this node did since the scheduler was created;
 *   sum over nodes in Prometheus. Defined once, in scheduler/observe/metrics.ts.
 * - **Store reads at scrape time** (gauges): cluster-wide, from any dashboard.
 */
export class DashboardMetrics {
  readonly registry = new Registry();
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
  private scheduler: Scheduler | undefined;

  constructor(private readonly store: Store) {}

  private gauge(name: string, help: string): Gauge {
    return new Gauge({ name, help, registers: [this.registry] });
  }

  /** Adds the metrics of a scheduler running in this process (`scheduler.metrics()`) to the scrape. */
  attach(scheduler: Scheduler): void {
    this.scheduler = scheduler;
  }

  close(): void {
    this.scheduler = undefined;
  }

  /** Reads the gauges from the store, then renders the exposition text (the scheduler's metrics after them). */
  async scrape(): Promise<string> {
    try {
      const [jobs, pauses, nodes, leases, inflight, pages] = await Promise.all([
        this.store.scan(keys.jobPrefix, { limit: 10_000 }),
        this.store.scan(keys.pausePrefix, { limit: 10_000 }),
        this.store.scan(keys.nodePrefix, { limit: 10_000 }),
        this.store.listLeases({ limit: 10_000 }),
        this.store.scan(keys.inflightPrefix(), { limit: 10_000 }),
        this.store.scan(keys.pageRecordPrefix(), { limit: 10_000 }),
      ]);
      const known = new Set(jobs.map((r) => jobOfKey(r.key)));
      this.jobs.set(known.size);
      this.paused.set(pauses.filter((r) => known.has(jobOfKey(r.key))).length);
      this.nodes.set(nodes.length);
      this.leases.set(leases.length);
      // Runs in flight: one in-flight record each, or one item of a page's record.
      let running = inflight.length;
      for (const r of pages) running += runningOfPage(decodePageRecord(r.value)).length;
      this.inflight.set(running);
      this.storeUp.set(1);
    } catch {
      this.storeUp.set(0);
    }
    const own = await this.registry.metrics();
    // Both are the text format, metric names apart: the two expositions concatenate into one.
    return this.scheduler ? `${own}\n${await this.scheduler.metrics()}` : own;
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
