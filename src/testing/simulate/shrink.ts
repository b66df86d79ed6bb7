import type { FaultPlan, SimulateOptions } from './options.js';
import { type SimulationResult, simulate } from './simulate.js';

/** Runs a shrink may spend at most. */
const MAX_RUNS = 80;

/**
 * Makes a failing run smaller while it still fails with the same kind of violation: fewer fault
 * events (each crash and partition dropped in turn), no message loss, no clock drift or late
 * timers, fewer nodes, a shorter run. Same seed throughout; the result is replayable as it is.
 */
export async function shrink(
  options: SimulateOptions,
  failing: SimulationResult,
): Promise<{ options: SimulateOptions; result: SimulationResult; runs: number }> {
  const kind = failing.violations[0]!.kind;
  let best = { ...options, plan: failing.plan };
  let bestResult = failing;
  let runs = 0;
  const attempt = async (candidate: SimulateOptions): Promise<boolean> => {
    if (runs >= MAX_RUNS) return false;
    runs++;
    const result = await simulate(candidate);
    if (!result.violations.some((v) => v.kind === kind)) return false;
    best = { ...candidate, plan: result.plan };
    bestResult = result;
    return true;
  };
  const withPlan = (plan: Partial<FaultPlan>): SimulateOptions => ({
    ...best,
    plan: { ...best.plan!, ...plan },
  });
  for (let i = best.plan!.crashes.length - 1; i >= 0; i--) {
    await attempt(withPlan({ crashes: best.plan!.crashes.filter((_, j) => j !== i) }));
  }
  for (let i = best.plan!.partitions.length - 1; i >= 0; i--) {
    await attempt(withPlan({ partitions: best.plan!.partitions.filter((_, j) => j !== i) }));
  }
  const faults = best.faults ?? {};
  for (const field of ['lostReplyRate', 'lostRequestRate', 'stallRate'] as const) {
    if (faults[field]) await attempt({ ...best, faults: { ...best.faults, [field]: 0 } });
  }
  if (best.plan!.drift.some((d) => d !== 0))
    await attempt(withPlan({ drift: best.plan!.drift.map(() => 0) }));
  // Fewer nodes: the last one goes, with its faults (nodes are numbered from the healthy ones up).
  for (let n = (best.nodes ?? 3) - 1; n >= 1; n--) {
    const plan = best.plan!;
    const keep = <T extends { node: number }>(list: T[]) => list.filter((e) => e.node < n);
    const ok = await attempt({
      ...best,
      nodes: n,
      plan: { ...plan, crashes: keep(plan.crashes), partitions: keep(plan.partitions) },
    });
    if (!ok) break;
  }
  // Shorter: end soon after the first violating event, keeping the settle period.
  const duration = best.durationMs ?? 60_000;
  for (const fraction of [0.5, 0.75]) {
    const shorter = Math.round(duration * fraction);
    const ok = await attempt({ ...best, durationMs: shorter });
    if (ok) break;
  }
  return { options: best, result: bestResult, runs };
}
