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
  // Runs of a page share its token: its claim and takeover lines name the token, not the occurrences.
  const tokens = new Set<string>();
  for (const l of result.trace)
    if (occs.some((o) => l.includes(o))) for (const m of l.matchAll(/token=(\d+)/g)) tokens.add(m[1]!);
  const pageLine = (l: string) =>
    / (page|takeover) +page\|/.test(l) && tokens.has(/token=(\d+)/.exec(l)?.[1] ?? '');
  const lines = result.trace.filter(
    (l) => faultWords.test(l) || occs.some((o) => l.includes(o)) || pageLine(l),
  );
  // Stuck: what happened just before time stopped.
  if (result.violations.some((v) => v.kind === 'stuck')) lines.push('  …', ...result.trace.slice(-40));
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
