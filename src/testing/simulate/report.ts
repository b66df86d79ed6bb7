import type { SimulateOptions } from './options.js';
import type { SimulationResult } from './simulate.js';

/** Trace lines shown at most in a report (the whole trace is in the result). */
const MAX_LINES = 300;

/**
 * A readable account of a failing run: the seed, how to replay it, the violations, and the trace
 * lines about the occurrences concerned plus every fault (crash, partition, lost reply, refused
 * release) — the story of what went wrong, one line per event.
 */
export function formatReport(options: SimulateOptions, result: SimulationResult): string {
  const occs = [...new Set(result.violations.map((v) => v.occ))];
  const replay = {
    seed: result.seed,
    nodes: options.nodes ?? 3,
    durationMs: options.durationMs ?? 60_000,
    faults: options.faults ?? {},
    plan: result.plan,
    ...(options.healthyNodes !== undefined && { healthyNodes: options.healthyNodes }),
  };
  const faultWords = /CRASH|PARTITION|healed|boot|lost|refused|start failed/;
  const lines = result.trace.filter((l) => faultWords.test(l) || occs.some((o) => l.includes(o)));
  const shown = lines.slice(0, MAX_LINES);
  return [
    `oncely simulate: ${result.violations.length} violation(s) with seed ${result.seed}`,
    `replay: simulate({ ...yourJobs, ...${JSON.stringify(replay)} })`,
    '',
    ...result.violations.map((v) => `  ${v.kind}  ${v.occ}: ${v.message}`),
    '',
    `trace (${shown.length} of ${result.trace.length} lines: the occurrences above and every fault):`,
    ...shown,
    ...(lines.length > shown.length ? [`  … ${lines.length - shown.length} more`] : []),
  ].join('\n');
}
