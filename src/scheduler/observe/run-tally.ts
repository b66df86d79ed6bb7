import type { RunSource } from '../types.js';
import type { SchedulerMetrics } from './metrics.js';

/** How long counts wait to be added (the timer does not keep the process alive). */
const FLUSH_MS = 100;

/**
 * The counters of runs started and succeeded (`oncely_runs_started_total`,
 * `oncely_lock_acquisitions_total`, `oncely_runs_total{status="succeeded"}`), summed per job and
 * source and added to the metrics every {@link FLUSH_MS} while runs start or end: a page's
 * thousand starts cost one `inc` per job and source, not three per run — prom-client
 * hashes a call's labels into a string at every call, and in a fan-out the five label hashes of
 * a run's metrics were ~1.3 KB of its ~20 KB of allocation. The histograms (lateness, duration)
 * still take every value.
 *
 * Invariant: a read of the registry sees every run counted before it — the counters' `collect`
 * (called by prom-client before it reads them) flushes first (metrics.ts `beforeRead`). Only a
 * metric another scheduler in the process created in a shared registry lacks that hook; a read
 * of that one lags by at most FLUSH_MS.
 */
export class RunTally {
  private readonly started = new Map<string, Map<RunSource, number>>();
  private readonly succeeded = new Map<string, number>();
  private queued = false;

  constructor(private readonly metrics: SchedulerMetrics) {
    metrics.beforeRead = () => this.flush();
  }

  start(job: string, source: RunSource): void {
    let bySource = this.started.get(job);
    if (bySource === undefined) {
      bySource = new Map();
      this.started.set(job, bySource);
    }
    bySource.set(source, (bySource.get(source) ?? 0) + 1);
    this.queue();
  }

  succeed(job: string): void {
    this.succeeded.set(job, (this.succeeded.get(job) ?? 0) + 1);
    this.queue();
  }

  /** Adds what was summed to the counters. */
  flush(): void {
    this.queued = false;
    const m = this.metrics;
    for (const [job, bySource] of this.started) {
      let all = 0;
      for (const [source, n] of bySource) {
        m.runsStarted.inc({ job, source }, n);
        all += n;
      }
      m.acquisitions.inc({ job }, all);
    }
    this.started.clear();
    for (const [job, n] of this.succeeded) m.runs.inc({ job, status: 'succeeded' }, n);
    this.succeeded.clear();
  }

  private queue(): void {
    if (this.queued) return;
    this.queued = true;
    // Not a microtask: a page's runs start in one loop, but each ends in a callback of its own.
    setTimeout(() => {
      if (this.queued) this.flush();
    }, FLUSH_MS).unref();
  }
}
