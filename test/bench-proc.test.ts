import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { procUsage } from '../bench/scale/proc.js';

/** bench:scale's per-process CPU (bench/scale/proc.ts): the main thread's apart from the rest. */
describe.runIf(process.platform === 'linux')('bench:scale process CPU', () => {
  it("counts a worker thread's CPU in the process's, not in the main thread's", async () => {
    const before = procUsage(process.pid)!;
    // A fixed amount of work (not a time): it costs its CPU however loaded the machine is.
    await new Promise<void>((resolve, reject) => {
      const w = new Worker(
        'let x = 0; for (let i = 0; i < 3e8; i++) x = (x + i * 7) % 1000003; require("node:worker_threads").parentPort.postMessage(x);',
        { eval: true },
      );
      w.once('message', () => resolve());
      w.once('error', reject);
    });
    const after = procUsage(process.pid)!;
    const all = after.cpuUs - before.cpuUs;
    const main = after.mainCpuUs - before.mainCpuUs;
    expect(Number.isFinite(main)).toBe(true);
    expect(main).toBeGreaterThanOrEqual(0);
    expect(main).toBeLessThanOrEqual(all);
    // The worker's loop ran off the main thread: at least ~0.1 s of it (it takes ~0.3–1 s here).
    expect(all - main).toBeGreaterThan(100_000);
  });
});
