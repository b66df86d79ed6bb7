import { type CheckInput, type CheckResult, occurrenceKey, type RunRecord } from './history-model.js';

/**
 * No overlap within a gate (see `checkHistory`): for a job whose facts give an `overlap` policy
 * other than `allow`, per overlap gate — the job's own trigger with its manual triggers, or one
 * stored schedule; per shard — a run that started while an earlier run of another occurrence of
 * the gate was still going: started at or before it, and finished more than `toleranceMs` after
 * it. Judged only on runs with a finish on record that was not stored after its lease lapsed (a
 * run whose lease lapsed was told to stop, and may have ended late), a run ending at the earlier
 * report of its finish (its handler's end), and under `replace` only
 * while the earlier run was within its lease (`leaseMs`) of its start: a replaced run is told to
 * stop, and its replacement starts once it has ended or after the lease.
 */
export function checkGates(
  input: CheckInput,
  byOccurrence: ReadonlyMap<string, { starts: RunRecord[]; finishes: RunRecord[] }>,
  endedAt: ReadonlyMap<RunRecord, number>,
  toleranceMs: number,
  result: CheckResult,
): void {
  const facts = new Map(input.jobs.map((j) => [j.job, j]));
  const byGate = new Map<string, { start: RunRecord; end: number | undefined }[]>();
  for (const [, { starts, finishes }] of byOccurrence) {
    const job = facts.get(starts[0]?.job ?? '');
    if (job?.overlap === undefined || job.overlap === 'allow') continue;
    for (const start of starts) {
      const finish = finishes.find((f) => f.token === start.token && f.attempt === start.attempt);
      const scope = start.scheduleId?.startsWith('manual:') ? undefined : start.scheduleId;
      const gate = `${start.job}\u0000${scope ?? ''}\u0000${start.shard ?? ''}`;
      const list = byGate.get(gate) ?? [];
      // Ended at its handler's end (the earlier report of a finish reported twice), not when its
      // outcome was stored: a finish batch that took seconds (its gate's lease lapsed meanwhile)
      // made a run that had ended "overlap" the next one (faults-skips, a loaded CI host).
      const end = finish && !finish.leaseLapsed ? (endedAt.get(finish) ?? finish.at) : undefined;
      list.push({ start, end });
      byGate.set(gate, list);
    }
  }
  for (const runs of byGate.values()) {
    runs.sort((a, b) => a.start.at - b.start.at);
    for (let j = 1; j < runs.length; j++) {
      const b = runs[j]!.start;
      const job = facts.get(b.job)!;
      for (let i = 0; i < j; i++) {
        const a = runs[i]!;
        if (a.end === undefined || occurrenceKey(a.start) === occurrenceKey(b)) continue;
        if (a.end - toleranceMs <= b.at) continue;
        if (job.overlap === 'replace' && b.at >= a.start.at + job.leaseMs) continue;
        result.violations.push({
          kind: 'overlap',
          occurrence: occurrenceKey(b),
          message: `${occurrenceKey(b)} started (${b.source}, token ${b.token}, on ${b.node}) at ${new Date(b.at).toISOString()} while ${occurrenceKey(a.start)} (${a.start.source}, token ${a.start.token}, on ${a.start.node}, started ${new Date(a.start.at).toISOString()}) was still going until ${new Date(a.end).toISOString()}: overlap '${job.overlap}' runs one at a time per gate`,
        });
        break;
      }
    }
  }
}
