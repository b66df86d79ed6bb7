import { keys } from '../keys.js';

/** What {@link countedPageMove} reads of a due entry (due-entry.ts `DueEntry`). */
interface CountedEntry {
  schedule: { id: string; v: string };
  left?: number;
  next?: number | undefined;
  unrun?: { next: number | undefined; nextAt: number | undefined } | undefined;
}

/**
 * The maxRuns part of a page's move (control/runs-left.ts), for an entry that carries `left`:
 * the count the moved entry carries; when the plan runs its fire time, the remaining-runs
 * record's move (n to n − 1, in the same claim: it fails exactly when the entry's does) and
 * where the entry goes instead if the page records the fire time skipped (left unchanged).
 * Nothing for an entry without `left`.
 */
export function countedPageMove(e: CountedEntry): {
  left?: number;
  count?: { from: string; to: string };
  unrun?: { to: string; next: number | undefined; left: number };
} {
  const left = e.left;
  if (left === undefined) return {};
  const { id, v } = e.schedule;
  if (e.unrun === undefined) return { left };
  const { next, nextAt } = e.unrun;
  return {
    left: left - 1,
    count: { from: keys.runsLeft(id, v, left), to: keys.runsLeft(id, v, left - 1) },
    unrun: {
      to: next === undefined ? keys.dueEnded(id, v) : keys.dueEntry(next, id, v, nextAt),
      next,
      left,
    },
  };
}
