/**
 * No fire time is lost to a claim nobody runs (see test/faults-skips.test.ts): a SIGSTOP'd node
 * resuming while the others keep running (Redis; the three nodes' wall clocks +30 s, −20 s and
 * true through libfaketime): back from the pause, it offers several fire times of the job in one
 * acquire, and the gate went to a fire time another node had run already. Judged by the strict
 * history checker, as there.
 */

import { describe, expect, it } from 'vitest';
import { openStore } from '../src/index.js';
import { createScheduler } from '../src/scheduler/index.js';
import { keys } from '../src/scheduler/keys.js';
import { sleep } from '../src/testing/suite-context.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import type { TsxChild } from './harness/child.js';
import {
  hasFaketime,
  LIBFAKETIME,
  skewEnv,
  startClockNode,
  stopAll,
  waitLine,
} from './harness/clock-nodes.js';
import { startFaultProxy } from './harness/fault-proxy.js';
import { runsFromLines } from './harness/history.js';
import { checkStored, firstFor, LEASE_MS, sleepUntil } from './harness/skips-check.js';

const redis = serverBackend('redis');
describe.skipIf(redis.skip ?? (hasFaketime ? false : `${LIBFAKETIME} is missing`))(
  'a SIGSTOPped node resumes while the others keep running (Redis, clocks +30 s, −20 s, true)',
  () => {
    it('no fire time is recorded skipped without a run going at it, none is lost', async () => {
      const prefix = testPrefix('stopskip');
      const job = 'report';
      const skews = { fast: 30_000, slow: -20_000, right: 0 } as const;
      // The true-clock node reaches Redis through a proxy that delays each way by 25 ms and shows
      // the test each request as it leaves the node: the node is frozen the instant its claim of
      // the fire time is sent, so the claim is granted (occurrence and gate) while nothing has
      // started. (A SIGSTOP at a fixed time missed that window once claims went ahead of the fire
      // time, src/scheduler/due/claim-lead.ts: it froze a run mid-handler, past its lease.)
      const link = await startFaultProxy(redis.url!);
      link.delay(25);
      const children: TsxChild[] = Object.entries(skews).map(([node, skew]) =>
        startClockNode(node === 'right' ? link.url : redis.url!, prefix, node, job, 'overlap', skewEnv(skew)),
      );
      const store = await openStore(redis.url!, { prefix });
      try {
        await Promise.all(children.map((c) => waitLine(c, (l) => l.event === 'ready', 'ready', 30_000)));
        const from = Math.ceil((await store.now()) / 1_000) * 1_000 + 2_000;
        await sleep(3_000);
        // Four times, at a fire time it goes first for, the true-clock node is frozen for 4 s (a
        // lease: its timers, claims and keep-alives stop) and resumes among nodes that kept running.
        const right = children[2]!;
        const offset = (await store.now()) - Date.now();
        let onClaim = 0;
        for (const f of await firstFor(store, 'right', job, (await store.now()) + 1_000, 4, 6_000)) {
          const claim = keys.occurrence({ job, scheduleId: undefined, fireTime: f, shard: undefined });
          const sent = new Promise<boolean>((resolve) => {
            link.onRequest((chunk) => {
              if (!chunk.includes(claim)) return;
              link.onRequest(undefined);
              right.process.kill('SIGSTOP');
              resolve(true);
            });
          });
          // Not claimed half a second after the fire time: frozen then anyway (and counted).
          const claimed = await Promise.race([sent, sleepUntil(f + 500, offset).then(() => false)]);
          link.onRequest(undefined);
          if (claimed) onClaim++;
          else right.process.kill('SIGSTOP');
          await sleep(4_000);
          right.process.kill('SIGCONT');
        }
        // The test's own premise: the freezes came between a claim and its start.
        expect(onClaim, 'freezes at the instant of a claim').toBeGreaterThanOrEqual(3);
        const to = Math.floor((await store.now()) / 1_000) * 1_000 - 1_000;
        await sleep(LEASE_MS + 2_000);
        await stopAll(children);
        const history = await createScheduler({ store }).history({ job, limit: 1_000 });
        try {
          const result = checkStored(job, history, runsFromLines(children.flatMap((c) => c.lines)), {
            from,
            to,
          });
          expect(result.occurrences).toBeGreaterThan(10);
        } catch (err) {
          // Failed once in a fresh-clone CI run (fire times with no run and no record for ~10 s),
          // never alone: what each node said, and the history, go to the log to be read.
          const said = Object.keys(skews).map(
            (node, i) =>
              `--- ${node}\n${children[i]!.lines.join('\n')}\n--- ${node} stderr\n${children[i]!.stderr()}`,
          );
          process.stderr.write(
            `faults-sigstop: from ${from} to ${to}, freezes at a claim ${onClaim}\n${said.join('\n')}\n` +
              `--- history\n${history.map((h) => JSON.stringify(h)).join('\n')}\n`,
          );
          throw err;
        }
      } finally {
        for (const c of children) {
          c.process.kill('SIGCONT');
          if (c.process.exitCode === null) c.process.kill('SIGKILL');
        }
        await store.close();
        await link.close();
      }
    }, 90_000);
  },
);
