import { gateScope } from '../../scheduler/keys.js';
import type { CheckedJob, Violation } from './checker-types.js';
import type { Invocation } from './history.js';

/**
 * `gate-overlap`: under every overlap policy but `allow`, the runs of one overlap gate — the job's
 * own trigger (with its manual triggers), or one stored schedule; per shard — never run side by
 * side: a run starts only when every earlier run of its gate has ended or been told to stop (its
 * signal aborted: its lease could not be kept, it timed out, or `replace` cancelled it). This is
 * the user's "no overlap" judged from the outside, whatever path started the runs: on time, in a
 * page, a misfire replay, a recovery, a manual trigger or a backfill.
 */
export function checkGates(
  invocations: readonly Invocation[],
  jobs: readonly CheckedJob[],
  violations: Violation[],
): void {
  const exclusive = new Set(jobs.filter((j) => j.overlap !== 'allow').map((j) => j.name));
  const byGate = new Map<string, Invocation[]>();
  for (const inv of invocations) {
    if (!exclusive.has(inv.job)) continue;
    const gate = `${inv.job}\u0000${gateScope(inv) ?? ''}\u0000${inv.shard ?? ''}`;
    const list = byGate.get(gate);
    if (list) list.push(inv);
    else byGate.set(gate, [inv]);
  }
  const at = (ms: number) => `${(ms / 1000).toFixed(3)}s`;
  for (const runs of byGate.values()) {
    runs.sort((a, b) => a.startedAt - b.startedAt);
    // The runs still on at the latest start seen (a run ends, or is aborted, once).
    let on: Invocation[] = [];
    for (const b of runs) {
      on = on.filter((a) => Math.min(a.endedAt ?? Infinity, a.abortedAt ?? Infinity) > b.startedAt);
      const a = on.find((x) => x.occ !== b.occ);
      if (a)
        violations.push({
          kind: 'gate-overlap',
          occ: b.occ,
          message: `${b.node} started it (${b.source}, token ${b.token}) at ${at(b.startedAt)} while ${a.node}'s run of ${a.occ} (${a.source}, token ${a.token}, started ${at(a.startedAt)}) was still going and not told to stop`,
        });
      on.push(b);
    }
  }
}
