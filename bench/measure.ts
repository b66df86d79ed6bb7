/**
 * Timing primitives. An operation is one full lock cycle (acquire + release) or one driver round
 * trip; it resolves to whether the lock was acquired (round trips always count as acquired).
 * Workers are async loops in this process; time is `performance.now()`.
 */

/** One benchmarked operation, run by worker `worker` (0-based). */
export type Op = (worker: number) => Promise<boolean>;

export interface CellOptions {
  /** Async workers running the operation back to back. */
  concurrency: number;
  /** Workers start no new operation after this long. */
  durationMs: number;
  /** Keep every operation's latency (for percentiles); only meaningful at concurrency 1. */
  recordLatency: boolean;
}

export interface CellResult {
  /** Operations completed. */
  ops: number;
  acquired: number;
  refused: number;
  /** From the first start to the last completion. */
  elapsedMs: number;
  /** Per-operation latencies in ms, when recorded. */
  latencies: number[];
}

/** Runs `op` on `concurrency` workers for about `durationMs`; rejects on the first failed operation. */
export async function runCell(op: Op, options: CellOptions): Promise<CellResult> {
  const latencies: number[] = [];
  let acquired = 0;
  let refused = 0;
  const start = performance.now();
  const end = start + options.durationMs;
  const worker = async (w: number): Promise<void> => {
    let now = performance.now();
    while (now < end) {
      const ok = await op(w);
      const done = performance.now();
      if (options.recordLatency) latencies.push(done - now);
      if (ok) acquired++;
      else refused++;
      now = done;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, (_, w) => worker(w)));
  const elapsedMs = performance.now() - start;
  return { ops: acquired + refused, acquired, refused, elapsedMs, latencies };
}

/** Runs `op` `count` times in total, spread over `concurrency` workers (opens pooled connections, JIT-warms code). */
export async function warmUp(op: Op, concurrency: number, count: number): Promise<void> {
  let left = count;
  const worker = async (w: number): Promise<void> => {
    while (left > 0) {
      left--;
      await op(w);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
}

export function opsPerSecond(cell: CellResult): number {
  return cell.elapsedMs > 0 ? (cell.ops * 1000) / cell.elapsedMs : Number.NaN;
}
