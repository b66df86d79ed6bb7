/**
 * What `runDemo` accepts, and the bounds it holds the options to: the demo kills a node halfway
 * and must see its runs recovered before the end, so it cannot be shorter than
 * MIN_DEMO_DURATION_MS.
 */
import { invalidArgument } from '../../core/errors.js';

export interface DemoOptions {
  /** How long the demo runs, ms (default 30 s). */
  durationMs?: number;
  /** Number of node processes (default 3). */
  nodes?: number;
  /** Directory for the SQLite file and logs (default: a new temp dir, removed afterwards). */
  dir?: string;
  /** Where the live view and summary go (default process.stdout). */
  out?: NodeJS.WritableStream;
}

/**
 * Startup (~2 s), a search for a run to kill of 3.5 s, its recovery within lockAtMostFor + a
 * poll, and the wind-down (WIND_DOWN_MS) at the end.
 */
export const MIN_DEMO_DURATION_MS = 18_000;

/**
 * The duration and node count with defaults applied; INVALID_ARGUMENT when out of bounds.
 *
 * @example
 * const { durationMs, nodeCount } = checkDemoOptions({ durationMs: 30_000 }); // nodeCount 3
 */
export function checkDemoOptions(options: DemoOptions): { durationMs: number; nodeCount: number } {
  const durationMs = options.durationMs ?? 30_000;
  const nodeCount = options.nodes ?? 3;
  if (!Number.isFinite(durationMs) || durationMs < MIN_DEMO_DURATION_MS || durationMs > 3_600_000) {
    throw invalidArgument(
      `demo duration must be from ${MIN_DEMO_DURATION_MS / 1000}s to 1h (a node is killed halfway and must be recovered before the nodes stop); got ${durationMs} ms`,
    );
  }
  if (!Number.isInteger(nodeCount) || nodeCount < 2 || nodeCount > 10) {
    throw invalidArgument(`demo nodes must be a whole number from 2 to 10; got ${nodeCount}`);
  }
  return { durationMs, nodeCount };
}
