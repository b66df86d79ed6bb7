import { type Candidate, startOf } from '../internal-types.js';
import type { JobSpec } from '../job-options.js';
import type { NodeState } from '../node-state.js';
import type { Reservation } from '../run/fleet-limits.js';

/**
 * Claims (`claim`) the candidates that the fleet limits allow now (run/fleet-limits.ts) — of a
 * limited job, as many as a reservation grants, oldest first; of others, all — and gives back
 * what the claims did not launch, whatever happens. For claims made outside a due tick, whose
 * candidates the store offers again at a later poll (trigger requests, queued runs, backfill
 * requests, recoveries): what is not admitted waits there.
 */
export async function withAdmitted(
  s: NodeState,
  candidates: Candidate[],
  claim: (admitted: Candidate[]) => Promise<void>,
): Promise<void> {
  const admitted = await admit(s, candidates);
  try {
    await claim(admitted?.fitting ?? candidates);
  } finally {
    admitted?.settled();
  }
}

/** The limited candidates' reservations (see withAdmitted); `undefined` when no candidate's job is limited. */
async function admit(
  s: NodeState,
  candidates: Candidate[],
): Promise<{ fitting: Candidate[]; settled: () => void } | undefined> {
  const byJob = new Map<JobSpec, Candidate[]>();
  for (const c of candidates) {
    const spec = s.defined.get(c.occ.job)?.spec;
    if (!spec || !s.limits.limited(spec)) continue;
    const list = byJob.get(spec);
    if (list) list.push(c);
    else byJob.set(spec, [c]);
  }
  if (byJob.size === 0) return undefined;
  const refused = new Set<Candidate>();
  const grants: { spec: JobSpec; r: Reservation }[] = [];
  await Promise.all(
    [...byJob].map(async ([spec, cs]) => {
      cs.sort((a, b) => startOf(a) - startOf(b));
      const r = await s.limits.reserve(spec, cs.length, cs.map(startOf));
      grants.push({ spec, r });
      for (const c of cs.slice(r.granted)) refused.add(c);
      // What was refused is offered again at the next poll: it waits in line until then.
      const waiting = cs[r.granted];
      const askAt = Math.max(r.retryAt ?? 0, s.storeClock.estimate() + s.pollMs);
      s.limits.waitsFrom(spec, 'admit', waiting && startOf(waiting), askAt);
    }),
  );
  // A rate grant that waited for another job's reservation too long is not used (fleet-limits.ts).
  for (const { spec, r } of grants)
    if (s.limits.stale(spec, r)) for (const c of byJob.get(spec)!) refused.add(c);
  return {
    fitting: refused.size === 0 ? candidates : candidates.filter((c) => !refused.has(c)),
    settled: () => {
      for (const g of grants) s.limits.settled(g.spec, g.r);
    },
  };
}
