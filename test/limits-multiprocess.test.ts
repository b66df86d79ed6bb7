/**
 * Fleet limits across processes (issue 32 item 7): four node processes on PostgreSQL, 10,000
 * stored schedules of a job with `maxConcurrency: 40` and 10,000 of a job with
 * `rateLimit: { max: 2,000, per: '1s' }`, all due at one instant. The fleet never runs more
 * than 40 of the first at once (handler start and end, Date.now() on this one host), never
 * starts more than 2,000 of the second in any second as granted — measured at the handlers, in
 * any second less the longest a handler may begin after its grant (docs/limits.md) — and runs
 * each of the 20,000 exactly once.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';
import { openStore } from '../src/index.js';
import { createScheduler } from '../src/scheduler/index.js';
import { LATE_START_MS, MAX_GRANT_AGE_MS } from '../src/scheduler/run/fleet-limits.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { spawnTsx } from './harness/child.js';
import { until } from './harness/scheduler-suite.js';

const N = 10_000;

describe('fleet limits: 4 node processes on PostgreSQL, 10,000 due at once per job', () => {
  const postgres = serverBackend('postgres');
  const script = fileURLToPath(new URL('./fixtures/limits-node.ts', import.meta.url));

  it.skipIf(postgres.skip !== undefined)(
    'maxConcurrency 40 and rateLimit 2,000/s hold fleet-wide; each occurrence runs once',
    async () => {
      const prefix = testPrefix('limits4');
      const jobC = `limc-${randomId(5)}`;
      const jobR = `limr-${randomId(5)}`;
      const conc: { id: string; start: number; end: number }[] = [];
      const rate: { id: string; start: number }[] = [];
      let ready = 0;
      const procs = ['a', 'b', 'c', 'd'].map((id) =>
        spawnTsx(script, [postgres.url!, prefix, `lim-${id}`, jobC, jobR], (line) => {
          if (line.startsWith('{')) ready++;
          else if (line.startsWith('c ')) {
            const [, sid, start, end] = line.split(' ');
            conc.push({ id: sid!, start: Number(start), end: Number(end) });
          } else if (line.startsWith('r ')) {
            const [, sid, start] = line.split(' ');
            rate.push({ id: sid!, start: Number(start) });
          }
        }),
      );
      const store = await openStore(postgres.url!, { prefix });
      const control = createScheduler({ store, logger: false });
      try {
        await until(() => ready === 4, 60_000, '4 nodes started');
        const at = new Date((await store.now()) + 4_000);
        const all = [jobC, jobR].flatMap((job) =>
          Array.from({ length: N }, (_, i) => ({ id: `${job}:${i}`, job, at })),
        );
        await control.schedules.upsert(all);
        const began = performance.now();
        await until(() => conc.length >= N && rate.length >= N, 120_000, `${N} runs of each job`);
        const tookS = (performance.now() - began) / 1000;
        // A duplicate would come within a poll or two.
        await new Promise((r) => setTimeout(r, 1_000));
        const stderr = procs.map((p) => p.stderr()).join('');

        expect(new Set(conc.map((r) => r.id)).size, stderr).toBe(N);
        expect(conc.length).toBe(N);
        expect(new Set(rate.map((r) => r.id)).size).toBe(N);
        expect(rate.length).toBe(N);

        // Concurrency: a sweep over starts and ends (an end before a start at the same ms: a
        // permit comes back only after its run's end).
        const events = conc.flatMap((r) => [
          { t: r.start, d: 1 },
          { t: r.end, d: -1 },
        ]);
        events.sort((x, y) => x.t - y.t || x.d - y.d);
        let going = 0;
        let most = 0;
        for (const e of events) {
          going += e.d;
          most = Math.max(most, going);
        }
        expect(most).toBeLessThanOrEqual(40);
        expect(most).toBeGreaterThanOrEqual(20); // the limit is used, not just obeyed

        // Rate: starts are counted at their grant, on the store's clock; a handler begins after
        // the grant's reply, its claim sent within MAX_GRANT_AGE_MS of that reply and the
        // handler within LATE_START_MS of the claim, or it asks the window again. So in handler
        // time any second less those two and the reply's own time holds at most 2,000 (the
        // reply is allowed REPLY_MS here: a loaded machine). An 800 ms window held 2,040 on a
        // loaded CI run (handlers 100-300 ms after their grants here); a 650 ms window held a
        // whole second's 2,000 (the grants come in bursts a second apart, so a burst granted
        // twice, a limit not kept, shows as ~4,000 in any of these windows).
        const REPLY_MS = 150;
        const window = 1_000 - MAX_GRANT_AGE_MS - LATE_START_MS - REPLY_MS;
        const starts = rate.map((r) => r.start).sort((a, b) => a - b);
        let densest = 0;
        for (let i = 0, j = 0; i < starts.length; i++) {
          while (starts[i]! - starts[j]! >= window) j++;
          densest = Math.max(densest, i - j + 1);
        }
        expect(densest).toBeLessThanOrEqual(2_000);
        const spanS = (starts.at(-1)! - starts[0]!) / 1000;
        expect(spanS).toBeGreaterThanOrEqual(4);
        // And the limit is used: 10,000 at 2,000 a second take 5 s. When the due index read a
        // limited job's passed-over entries only at its 10 s safety read, this took 54 s
        // (grants in bursts ten seconds apart); 5.6-10.2 s since, CI runs included.
        expect(spanS).toBeLessThan(25);
        // How much of the concurrency limit the handlers used (printed: 20 ms runs, 40 at once).
        const first = Math.min(...conc.map((r) => r.start));
        const last = Math.max(...conc.map((r) => r.end));
        const busy = conc.reduce((sum, r) => sum + (r.end - r.start), 0) / (40 * (last - first));
        console.log(
          `fleet limits, 4 processes: ${N} at maxConcurrency 40 (most at once ${most}, ${((last - first) / 1000).toFixed(1)} s, permits busy ${(busy * 100).toFixed(0)} %) and ${N} at 2,000/s (densest ${window} ms: ${densest}, span ${spanS.toFixed(1)} s) in ${tookS.toFixed(1)} s`,
        );
      } finally {
        for (const p of procs) if (p.process.exitCode === null) p.process.kill('SIGKILL');
        await store.close();
      }
    },
    180_000,
  );
});
