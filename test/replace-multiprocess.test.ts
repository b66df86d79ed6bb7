/**
 * Overlap 'replace' across processes (issue 32 item 5): three node processes on PostgreSQL run a
 * job every second for three fire times whose runs wait on their signal. Whichever process holds
 * the running run, the next fire time aborts it (code REPLACED) and starts once it has ended:
 * never two at once (Date.now() on this one host), each fire time once and in order, the replaced
 * runs recorded failed, the last one succeeded.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';
import { openStore } from '../src/index.js';
import { createScheduler } from '../src/scheduler/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { spawnTsx } from './harness/child.js';
import { until } from './harness/scheduler-suite.js';

describe('overlap replace: 3 node processes on PostgreSQL', () => {
  const postgres = serverBackend('postgres');
  const script = fileURLToPath(new URL('./fixtures/replace-node.ts', import.meta.url));

  it.skipIf(postgres.skip !== undefined)(
    'each run is replaced by the next fire time wherever it runs; never two at once; in order',
    async () => {
      const prefix = testPrefix('replace3');
      const job = `rep-${randomId(5)}`;
      const store = await openStore(postgres.url!, { prefix });
      const starts: { fireTime: number; at: number; node: string }[] = [];
      const ends: { fireTime: number; at: number; code: string }[] = [];
      let ready = 0;
      // Far enough ahead for three processes to start (tsx compiles on a loaded machine).
      const startAt = Math.ceil(((await store.now()) + 8_000) / 1_000) * 1_000;
      const procs = ['a', 'b', 'c'].map((id) =>
        spawnTsx(script, [postgres.url!, prefix, `rep-${id}`, job, String(startAt)], (line) => {
          const [what, fireTime, at, code] = line.split(' ');
          if (line.startsWith('{')) ready++;
          else if (what === 'start') starts.push({ fireTime: Number(fireTime), at: Number(at), node: id });
          else if (what === 'end') ends.push({ fireTime: Number(fireTime), at: Number(at), code: code! });
        }),
      );
      const reader = createScheduler({ store, logger: false });
      try {
        await until(() => ready === 3, 30_000, '3 nodes started');
        expect(await store.now(), 'the nodes started after the first fire time').toBeLessThan(startAt);
        await until(() => ends.length >= 3, 30_000, 'three runs to end');
        await new Promise((r) => setTimeout(r, 500));
        const expected = [0, 1, 2].map((i) => startAt + i * 1_000);
        const byStart = [...starts].sort((a, b) => a.at - b.at);
        const stderr = procs.map((p) => p.stderr()).join('');
        expect(
          byStart.map((s) => s.fireTime),
          stderr,
        ).toEqual(expected);
        const endOf = (t: number) => ends.find((e) => e.fireTime === t)!;
        for (let i = 1; i < byStart.length; i++)
          expect(byStart[i]!.at).toBeGreaterThanOrEqual(endOf(byStart[i - 1]!.fireTime).at);
        expect(expected.map((t) => endOf(t).code)).toEqual(['REPLACED', 'REPLACED', '-']);
        const history = await reader.history({ job, limit: 100 });
        const final = (t: number) =>
          history.filter((h) => h.fireTime.getTime() === t && h.status !== 'running').map((h) => h.status);
        expect(expected.map(final)).toEqual([['failed'], ['failed'], ['succeeded']]);
        console.log(`replace, 3 processes: runs on ${byStart.map((s) => s.node).join(', ')}`);
      } finally {
        for (const p of procs) if (p.process.exitCode === null) p.process.kill('SIGKILL');
        await store.close();
      }
    },
    90_000,
  );
});
