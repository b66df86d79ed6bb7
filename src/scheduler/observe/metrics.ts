import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';

const load = createRequire(import.meta.url);
let prom: typeof PromClient | undefined;

/** Seconds; from 5 ms to an hour (runs) and to 5 minutes (lateness). */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const LATENESS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/**
 * What one scheduler node did, as Prometheus metrics: the one definition of them (the dashboard
 * shows a scheduler's by rendering this registry). Counters count from the scheduler's creation.
 * prom-client is loaded with the first scheduler, not with `import 'oncely'` (locks need none).
 */
export class SchedulerMetrics {
  readonly registry: Registry;
  readonly runsStarted: Counter<'job' | 'source'>;
  readonly runs: Counter<'job' | 'status'>;
  readonly failures: Counter<'job'>;
  readonly duration: Histogram<'job' | 'status'>;
  readonly lateness: Histogram<'job'>;
  readonly acquisitions: Counter<'job'>;
  readonly claimsAttempted: Counter<'job'>;
  readonly claimsWon: Counter<'job'>;
  readonly claimsRefused: Counter<'job'>;
  readonly misfires: Counter<'job' | 'action'>;
  readonly storeErrors: Counter;
  readonly running: Gauge;
  /**
   * Called before prom-client reads the run counters (their `collect`): counts summed and not
   * added yet are added first (run-tally.ts).
   */
  beforeRead: (() => void) | undefined;

  /** `shared`: the user's registry (the `registry` option); a metric already in it is reused. */
  constructor(shared: Registry | undefined) {
    prom ??= load('prom-client') as typeof PromClient;
    const { Counter, Gauge, Histogram, Registry } = prom;
    this.registry = new Registry();
    const add = <M extends PromClient.Metric>(name: string, make: () => M): M => {
      const existing = shared?.getSingleMetric(name) as M | undefined;
      const metric = existing ?? make();
      this.registry.registerMetric(metric);
      if (!existing) shared?.registerMetric(metric);
      return metric;
    };
    const counter = <L extends string>(
      name: string,
      help: string,
      labelNames: readonly L[],
      tallied = false,
    ) =>
      add(
        name,
        () =>
          new Counter<L>({
            name,
            help,
            labelNames,
            registers: [],
            ...(tallied && { collect: () => this.beforeRead?.() }),
          }),
      );
    this.runsStarted = counter(
      'oncely_runs_started_total',
      'Run attempts started on this node, by job and source (schedule, misfire, retry, recover, manual, backfill).',
      ['job', 'source'],
      true,
    );
    this.runs = counter(
      'oncely_runs_total',
      'Finished runs on this node by job and status (succeeded, failed, timed-out, skipped).',
      ['job', 'status'],
      true,
    );
    this.failures = counter(
      'oncely_run_failures_total',
      'Failed or timed-out runs on this node, by job (retries included).',
      ['job'],
    );
    this.acquisitions = counter(
      'oncely_lock_acquisitions_total',
      'Occurrence claims this node acquired and started a run under, by job (as oncely_runs_started_total summed over source).',
      ['job'],
      true,
    );
    this.claimsAttempted = counter(
      'oncely_claims_attempted_total',
      'Occurrence claims this node asked the store for, by job.',
      ['job'],
    );
    this.claimsWon = counter(
      'oncely_claims_won_total',
      'Occurrence claims the store granted this node and it kept (to run or to settle a misfire), by job.',
      ['job'],
    );
    this.claimsRefused = counter(
      'oncely_claims_refused_total',
      'Occurrence claims the store refused (another node holds or finished the occurrence), by job.',
      ['job'],
    );
    this.misfires = counter(
      'oncely_misfires_total',
      'Missed fire times by job and action (run: replayed; skipped: dropped by the misfire policy).',
      ['job', 'action'],
    );
    this.storeErrors = counter(
      'oncely_store_errors_total',
      "Errors the scheduler on this node reported ('error' events: store calls that failed).",
      [],
    );
    this.duration = add(
      'oncely_run_duration_seconds',
      () =>
        new Histogram<'job' | 'status'>({
          name: 'oncely_run_duration_seconds',
          help: 'How long handlers ran on this node, by job and status (succeeded, failed, timed-out).',
          labelNames: ['job', 'status'],
          buckets: DURATION_BUCKETS,
          registers: [],
        }),
    );
    this.lateness = add(
      'oncely_start_lateness_seconds',
      () =>
        new Histogram<'job'>({
          name: 'oncely_start_lateness_seconds',
          help: 'Seconds from an occurrence fire time to its handler start on this node (store clock).',
          labelNames: ['job'],
          buckets: LATENESS_BUCKETS,
          registers: [],
        }),
    );
    this.running = add(
      'oncely_runs_running',
      () =>
        new Gauge({
          name: 'oncely_runs_running',
          help: 'Runs going on this node now (claimed, not finished).',
          registers: [],
        }),
    );
  }

  /** The Prometheus text exposition of this scheduler's metrics. */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
