import { invalidArgument } from '../../core/errors.js';
import type { SimulateOptions } from './options.js';
import { formatReport } from './report.js';
import { shrink } from './shrink.js';
import { type SimulationResult, simulate } from './simulate.js';

/** What `explore(options)` accepts: {@link SimulateOptions} without `seed` and `plan`, plus the seed range. */
export interface ExploreOptions extends Omit<SimulateOptions, 'seed' | 'plan'> {
  /** How many seeds to run. */
  seeds: number;
  /** The first seed (default 1): seeds `firstSeed` … `firstSeed + seeds - 1`. */
  firstSeed?: number;
  /** Shrink the first failing run (default true). */
  shrink?: boolean;
  /** Where the report of a failure goes (default `console.error`); `false`: nowhere. */
  log?: ((text: string) => void) | false;
}

/** What `explore` found. */
export interface ExploreResult {
  /** No seed broke a guarantee. */
  ok: boolean;
  /** Seeds run (up to and including the first failing one). */
  seedsRun: number;
  /** Real time taken, in ms. */
  wallMs: number;
  /** Throughput: seeds per minute of real time. */
  seedsPerMinute: number;
  /** The first failing seed, shrunk. */
  failure?: {
    /** The seed that failed. */
    seed: number;
    /** The options that replay the shrunk failure with `simulate` (add your jobs' handlers back). */
    options: SimulateOptions;
    /** The shrunk run's result: violations and trace. */
    result: SimulationResult;
    /** The readable report that was logged: seed, violations, trace. */
    report: string;
  };
}

/**
 * Runs `simulate` over many seeds, stops at the first violation, shrinks it and prints the seed
 * and a readable trace.
 *
 * @example
 * const { ok, failure } = await explore({
 *   seeds: 1_000,
 *   jobs: [{ name: 'report', options: { every: '1s', lockAtMostFor: '5s' } }],
 *   faults: { latencyMs: [2, 40], crashes: 3, partitions: 2 },
 * });
 */
export async function explore(options: ExploreOptions): Promise<ExploreResult> {
  const { seeds, firstSeed = 1, shrink: doShrink = true, log, ...rest } = options;
  if (!Number.isInteger(seeds) || seeds < 1)
    throw invalidArgument('explore: seeds must be a whole number >= 1');
  const started = performance.now();
  let seedsRun = 0;
  const done = (failure?: ExploreResult['failure']): ExploreResult => {
    const wallMs = Math.round(performance.now() - started);
    return {
      ok: failure === undefined,
      seedsRun,
      wallMs,
      seedsPerMinute: Math.round((seedsRun / Math.max(1, wallMs)) * 60_000),
      ...(failure && { failure }),
    };
  };
  for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
    const simOptions: SimulateOptions = { ...rest, seed };
    const result = await simulate(simOptions);
    seedsRun++;
    if (result.ok) continue;
    const shrunk = doShrink ? await shrink(simOptions, result) : { options: simOptions, result };
    const report = formatReport(shrunk.options, shrunk.result);
    if (log !== false) (log ?? console.error)(report);
    return done({ seed, options: shrunk.options, result: shrunk.result, report });
  }
  return done();
}
