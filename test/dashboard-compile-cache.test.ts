/**
 * The dashboard compiles each stored schedule's trigger once per process, through the scheduler's
 * shared cache (issue 29, finding 3: ten stored 500 KB crons, compiled again on every request,
 * stalled the event loop 3.5 s per `GET /api/schedules`). Every compilation is counted here by
 * wrapping `compileTrigger`, the one function that builds a croner pattern.
 */
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import type { Dashboard } from '../src/dashboard/server.js';
import { compileTrigger, type Trigger } from '../src/schedule/trigger.js';
import { keys } from '../src/scheduler/keys.js';
import { type Cluster, dashboardFor, startCluster } from './fixtures/dashboard/cluster.js';

vi.mock('../src/schedule/trigger.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../src/schedule/trigger.js')>();
  return { ...actual, compileTrigger: vi.fn(actual.compileTrigger) };
});

const JOB = 'nightly-report';
/** Twenty crons no job of the fixture uses. */
const CRONS = Array.from({ length: 20 }, (_, i) => `${i + 1} 4 * * *`);

let cluster: Cluster;
let dashboard: Dashboard;

/** Compilations of the stored schedules' crons so far (the fixture's jobs compile their own). */
function compilations(): number {
  return vi
    .mocked(compileTrigger)
    .mock.calls.filter(([t]) => CRONS.includes((t as Trigger & { cron?: string }).cron ?? '')).length;
}

beforeAll(async () => {
  cluster = await startCluster('memory:');
  // Written straight into the store, so that no upsert has compiled them yet in this process.
  await cluster.store.apply(
    CRONS.flatMap((cron, i) => {
      const id = `s-${String(i).padStart(2, '0')}`;
      return [
        {
          op: 'put' as const,
          key: keys.schedule(id),
          value: JSON.stringify({ id, job: JOB, cron, v: `a.${i}` }),
        },
        { op: 'put' as const, key: keys.scheduleOfJob(JOB, id), value: '' },
      ];
    }),
  );
  dashboard = await dashboardFor(cluster);
}, 30_000);

afterAll(async () => {
  await dashboard?.close();
  await cluster?.close();
});

it('compiles each stored cron once, however many requests show it', async () => {
  const show = async (path: string) => {
    const res = await fetch(dashboard.url + path);
    expect(res.status, path).toBe(200);
    return res.text();
  };
  expect(await show(`/api/schedules?job=${JOB}`)).toContain('"nextFireTime":"');
  const first = compilations();
  expect(first).toBeGreaterThan(0);
  expect(first).toBeLessThanOrEqual(CRONS.length);
  for (let i = 0; i < 5; i++) {
    await show(`/api/schedules?job=${JOB}`);
    await show('/api/schedules');
    await show(`/jobs/${JOB}`);
  }
  // Fifteen more requests: not one more compilation (each used to compile all twenty again).
  expect(compilations()).toBe(first);
});
