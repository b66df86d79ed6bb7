/**
 * The chaos driver (bench/chaos, `npm run chaos`) for 40 s on PostgreSQL: 5 node processes, each
 * through its own fault proxy, under seeded SIGKILL/SIGSTOP/proxy/store-restart faults; the
 * history checker must find no violated guarantee, and the run must really have exercised the
 * scheduler (occurrences ran, faults were injected, the sink accepted writes).
 */
import { describe, expect, it } from 'vitest';
import { runChaos } from '../bench/chaos/run.js';
import { formatViolations } from '../src/testing/index.js';

describe('chaos (60 s CI variant)', () => {
  it('5 nodes on PostgreSQL under random faults: no violated guarantee', async () => {
    const seed = Number(process.env.ONCELY_CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const report = await runChaos({ backend: 'postgres', durationMs: 40_000, nodes: 5, seed });
    const { result } = report;
    console.log(
      `chaos seed ${seed}: ${result.occurrences} occurrences, ${result.recoveries} recoveries, ` +
        `${result.staleWritesRefused} stale writes refused, faults ${JSON.stringify(report.faults)}`,
    );
    expect(formatViolations(result), `seed ${seed}\n${report.timeline.join('\n')}`).toBe('');
    expect(result.occurrences).toBeGreaterThan(40);
    expect(result.writesAccepted).toBeGreaterThan(40);
    expect(Object.values(report.faults).reduce((a, b) => a + b, 0)).toBeGreaterThan(5);
  }, 120_000);
});
