import type { Candidate } from '../internal-types.js';
import type { PageItem } from './page-record.js';

/**
 * The maxRuns part of a page item's move (control/runs-left.ts, due/counted-move.ts): an item
 * the page runs moves its entry with one run less and moves the remaining-runs record (`count`);
 * one it will not run (skipped for overlap, excluded) moves its entry to `unrun` with the count
 * unchanged — `item.to` is set to where it really goes, which a recovery of a page that never
 * started reads. Nothing for a schedule without maxRuns.
 */
export function countedMove(
  c: Candidate,
  item: PageItem,
): { move: { to?: string; next?: number | undefined; left?: number }; count?: { from: string; to: string } } {
  const m = c.pageMove!;
  if (m.unrun === undefined) return { move: {} };
  if (item.kind === 'run' && c.excluded !== true) return { move: {}, ...(m.count && { count: m.count }) };
  item.to = m.unrun.to;
  return { move: { to: m.unrun.to, next: m.unrun.next, left: m.unrun.left } };
}
