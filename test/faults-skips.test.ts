/**
 * No fire time is lost to a claim nobody runs. Two faults that lost fire times "on record" before
 * overlap was decided by runs (a gate held by a claim that had not started made the healthy nodes
 * record the next fire times skipped while nothing ran), judged by the strict history checker:
 * every expected fire time ran, or its skip is borne out — an overlap skip by a run of its gate
 * that had started before the fire time and was still going at it.
 *
 * - Dropped replies on one of three links (PostgreSQL, Redis, MariaDB), through the fault proxy:
 *   the server grants the node's claim (occurrence and gate), the node never hears of it.
 * - A SIGSTOP'd node resuming while the others keep running: test/faults-sigstop.test.ts.
 *
 * Job (as a user tried it): `every: '1s'`, 150 ms of work, `lockAtMostFor: '4s'`, overlap skip,
 * misfire run-once, polls every 200 ms.
 */

import { describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/index.js';
import { CLAIM_LEAD_MS } from '../src/scheduler/due/claim-lead.js';
import { createScheduler, type Scheduler } from '../src/scheduler/index.js';
import { sleep } from '../src/testing/suite-context.js';
import { runLines } from './fixtures/run-lines.js';
import { type ServerBackend, serverBackend, testPrefix } from './harness/backends.js';
import { type FaultProxy, startFaultProxy } from './harness/fault-proxy.js';
import { runsFromLines } from './harness/history.js';
import { until } from './harness/scheduler-suite.js';
import { checkStored, firstFor, JOB, LEASE_MS, sleepUntil } from './harness/skips-check.js';

for (const backend of ['postgres', 'redis', 'mysql'] as const satisfies readonly ServerBackend[]) {
  const target = serverBackend(backend);
  describe.skipIf(target.skip)(`dropped claim replies on one of three links (${backend})`, () => {
    it('every fire time runs, or is skipped behind a run that was really going; the lost grant runs late, once', async () => {
      const prefix = testPrefix(`dropskip_${backend}`);
      const job = 'report';
      const proxies: FaultProxy[] = [];
      const stores: Store[] = [];
      const schedulers: Scheduler[] = [];
      const lines: object[] = [];
      const direct = await openStore(target.url!, { prefix });
      try {
        for (let i = 0; i < 3; i++) {
          const proxy = await startFaultProxy(target.url!);
          proxies.push(proxy);
          const store = await openStore(proxy.url, { prefix, connectTimeoutMs: 1_500 });
          stores.push(store);
          const s = createScheduler({ store, node: `n${i}`, pollInterval: '200ms', stopTimeout: '5s' });
          s.on('error', () => {});
          // Starts, finishes (once stored: this host's clock is the servers'), skips.
          runLines(s, (line) => lines.push(line));
          s.define(job, JOB, () => sleep(150));
          schedulers.push(s);
        }
        await Promise.all(schedulers.map((s) => s.start()));
        await until(() => lines.length >= 6, 15_000, 'the first runs');
        const from = Math.ceil((await direct.now()) / 1_000) * 1_000 + 1_000;
        // Four fire times n0 goes first for (spreading: the same choice n0 makes from the
        // heartbeats), at least 3 s apart: from just before n0 claims each — up to the claim lead
        // ahead of it (src/scheduler/due/claim-lead.ts) — n0's replies are dropped for 1.2 s (the
        // server does the work, the answer is lost), then its connections are reset.
        // Its claim of that fire time — occurrence and gate — is granted unheard, and the next
        // fire time is claimed by the healthy nodes while that gate is held by a claim that has
        // not started. (Dropping blindly mostly hit n0's polls: a node whose store fails backs
        // off and claims nothing, so its share goes to the others after the grace.)
        const targets = await firstFor(direct, 'n0', job, from + 2_000, 4, 3_000);
        const lossy = proxies[0]!;
        // This host's clock is the servers' (all on loopback); the offset is measured anyway.
        const offset = (await direct.now()) - Date.now();
        for (const f of targets) {
          await sleepUntil(f - CLAIM_LEAD_MS - 50, offset);
          lossy.dropReplies(true);
          await sleep(1_200);
          lossy.dropReplies(false);
          lossy.resetAll();
        }
        const to = Math.floor((await direct.now()) / 1_000) * 1_000 - 1_000;
        // A lease and a few polls for what was granted unheard to run.
        await sleep(LEASE_MS + 2_000);
        await Promise.all(schedulers.map((s) => s.stop()));
        const history = await createScheduler({ store: direct }).history({ job, limit: 1_000 });
        const result = checkStored(job, history, runsFromLines(lines), { from, to });
        expect(result.occurrences).toBeGreaterThan(10);
      } finally {
        await Promise.all(schedulers.map((s) => s.stop().catch(() => {})));
        await Promise.all(stores.map((s) => s.close().catch(() => {})));
        await Promise.all(proxies.map((p) => p.close()));
        await direct.close();
      }
    }, 90_000);
  });
}
