/**
 * oncely/nestjs across processes: three instances of one NestJS application (test/fixtures/nest)
 * on one PostgreSQL store, each with @nestjs/schedule's own timers. Every fire time of every job
 * must run on exactly one instance, and SIGTERM must shut each instance down cleanly (exit 0,
 * nothing left running).
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { serverBackend, testPrefix } from './harness/backends.js';
import { spawnTsx, type TsxChild } from './harness/child.js';
import { expectHistoryHolds } from './harness/history.js';

const entry = fileURLToPath(new URL('./fixtures/nest/node.ts', import.meta.url));
const tsconfig = fileURLToPath(new URL('./fixtures/nest/tsconfig.json', import.meta.url));
const postgres = serverBackend('postgres');

interface Run {
  job: string;
  node: string;
  fireTime: number;
  token: number;
}

async function until(what: string, condition: () => boolean, timeoutMs: number, children: TsxChild[]) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${what}; stderr:\n${children.map((c) => c.stderr()).join('\n')}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe.skipIf(postgres.skip)('NestJS application, 3 instances on one PostgreSQL store', () => {
  it('runs each fire time of @Cron+@Once, @Interval+@Once and @ClusterJob on exactly one instance; SIGTERM exits 0', async () => {
    const prefix = testPrefix('nest');
    const nodes = ['n1', 'n2', 'n3'];
    const ready = new Map<string, number>();
    const runs: Run[] = [];
    const refused: { node: string; method: string }[] = [];
    const closed = new Set<string>();
    const children = nodes.map((node) =>
      spawnTsx(
        entry,
        [postgres.url!, prefix, node],
        (line) => {
          if (!line.startsWith('{')) return;
          const msg = JSON.parse(line) as Run & { event?: string; method: string };
          if (msg.event === 'ready') ready.set(msg.node, Date.now());
          else if (msg.event === 'closed') closed.add(msg.node);
          else if (msg.event === 'refused') refused.push(msg);
          else runs.push(msg);
        },
        { tsconfig },
      ),
    );
    const exits = children.map((c) => c.exited.then((code) => ({ code, signal: c.process.signalCode })));
    await until('3 ready instances', () => ready.size === 3, 30_000, children);
    // Whole fire times from the first one at which every instance's timers were running.
    const from = Math.ceil((Math.max(...ready.values()) + 1) / 1000) * 1000;
    const fired = (job: string) => runs.filter((r) => r.job === job && r.fireTime >= from).length;
    await until(
      '5 fire times of each job with all 3 instances up',
      () => ['cron', 'interval', 'x'].every((job) => fired(job) >= 5),
      20_000,
      children,
    );
    const stoppedAt = Date.now();
    for (const child of children) child.process.kill('SIGTERM');
    const ended = await Promise.race([
      Promise.all(exits),
      new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 15_000)),
    ]);
    if (ended === 'hung') for (const child of children) child.process.kill('SIGKILL');
    const stderr = children.map((c) => c.stderr()).join('\n');
    expect(ended, stderr).toEqual(nodes.map(() => ({ code: 0, signal: null })));
    expect([...closed].sort()).toEqual(nodes);

    for (const job of ['cron', 'interval', 'x']) {
      const byFire = new Map<number, Run[]>();
      for (const run of runs.filter((r) => r.job === job)) {
        byFire.set(run.fireTime, [...(byFire.get(run.fireTime) ?? []), run]);
      }
      const twice = [...byFire.values()].filter((list) => list.length > 1);
      expect(twice, `${job}: fire times run more than once`).toEqual([]);
      // Every whole second while all three ran (to a second before SIGTERM) ran on one of them.
      const expected: number[] = [];
      for (let t = from; t + 1000 <= stoppedAt; t += 1000) expected.push(t);
      const missing = expected.filter((t) => !byFire.has(t));
      expect(missing, `${job}: fire times nobody ran`).toEqual([]);
      expect(expected.length).toBeGreaterThanOrEqual(4);
      // The history checker over the same runs: no duplicate, no lost fire time, in one pass.
      expectHistoryHolds({
        records: runs
          .filter((r) => r.job === job)
          .map((r) => ({
            ...r,
            attempt: 1,
            source: 'schedule' as const,
            event: 'start' as const,
            at: r.fireTime,
          })),
        jobs: [{ job, leaseMs: 30_000 }],
        expected: expected.map((fireTime) => ({ job, fireTime })),
      });
    }
    // The instances really raced for the @Cron fire times: the losers' ticks were refused.
    const cronRefusals = refused.filter((r) => r.method === 'Jobs.everySecond');
    expect(new Set(cronRefusals.map((r) => r.node)).size).toBeGreaterThanOrEqual(2);
    expect(cronRefusals.length).toBeGreaterThanOrEqual(runs.filter((r) => r.job === 'cron').length);
  }, 60_000);
});
