/**
 * examples/nest, run as a user runs it: two replicas of the example application (compiled oncely
 * from dist/: CI builds first) on one SQLite file. Each fire time is reported by one replica, the
 * history checker finds nothing wrong in what they recorded, and both shut down on SIGTERM.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/index.js';
import { createScheduler } from '../src/scheduler/index.js';
import { recordsFromHistory } from '../src/testing/index.js';
import { spawnTsx, type TsxChild } from './harness/child.js';
import { expectHistoryHolds } from './harness/history.js';

const main = fileURLToPath(new URL('../examples/nest/main.ts', import.meta.url));
const tsconfig = fileURLToPath(new URL('../examples/nest/tsconfig.json', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'oncely-nest-example-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('examples/nest', () => {
  it('two replicas on one SQLite file: each fire time of @Once and @ClusterJob reported once; SIGTERM ends both', async () => {
    const reports: { kind: string; fireTime: string; replica: number }[] = [];
    const env = { ONCELY_STORE: `sqlite:${join(dir, 'oncely.db')}`, NO_COLOR: '1' };
    const replicas: TsxChild[] = [0, 1].map((replica) =>
      spawnTsx(
        main,
        [],
        (line) => {
          const m = /\[ReportService\] (report|cleanup) for (\S+)/.exec(line);
          if (m) reports.push({ kind: m[1]!, fireTime: m[2]!, replica });
        },
        { tsconfig, env },
      ),
    );
    const seen = (kind: string) =>
      new Set(reports.filter((r) => r.kind === kind).map((r) => r.fireTime)).size;
    const deadline = Date.now() + 25_000;
    while (seen('report') < 1 || seen('cleanup') < 1) {
      if (Date.now() > deadline) throw new Error(replicas.map((r) => r.stderr()).join('\n'));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Let the other replica's ticks for the same fire times come and be refused.
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const r of replicas) r.process.kill('SIGTERM');
    const ends = await Promise.all(replicas.map((r) => r.exited.then(() => r.process.signalCode)));
    // app.enableShutdownHooks() closes the application, then re-raises the signal.
    expect(ends).toEqual(['SIGTERM', 'SIGTERM']);
    for (const kind of ['report', 'cleanup']) {
      const fireTimes = reports.filter((r) => r.kind === kind).map((r) => r.fireTime);
      expect(fireTimes.length, kind).toBeGreaterThan(0);
      expect(new Set(fireTimes).size, `${kind}: a fire time reported twice`).toBe(fireTimes.length);
    }
    // The history checker over what the replicas recorded of the @ClusterJob (the @Once method is
    // a lock per fire time and keeps no history).
    const store = await openStore(env.ONCELY_STORE);
    try {
      const history = await createScheduler({ store }).history({ job: 'cleanup', limit: 1_000 });
      expect(history.length).toBeGreaterThan(0);
      const checked = expectHistoryHolds({
        records: recordsFromHistory(history),
        jobs: [{ job: 'cleanup', leaseMs: 30_000 }],
      });
      expect(checked.occurrences).toBe(history.length);
    } finally {
      await store.close();
    }
  }, 40_000);
});
