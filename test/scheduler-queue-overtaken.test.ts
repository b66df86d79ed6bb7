/**
 * Overlap 'queue': a fire time queued behind a run (its pending record) whose gate was then taken
 * by a newer fire time's run — an on-time claim that won the gate the moment the earlier run
 * ended, before the queued run's claim did — is recorded skipped (superseded by the newer run),
 * never run after it and never left queued with no trace (src/scheduler/control/requests.ts). Seen on
 * etcd in the scheduler suite: 1.3 s runs every 1 s, a fire time neither run nor recorded.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScheduler, type Scheduler } from '../src/scheduler/index.js';
import { gateScope, keys, type OccurrenceId } from '../src/scheduler/keys.js';
import { MemoryStore } from '../src/store/memory.js';

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return check();
}

describe('overlap queue: a queued run overtaken by a newer run', () => {
  let scheduler: Scheduler | undefined;
  afterEach(async () => {
    await scheduler?.stop();
  });

  it('is recorded skipped once a newer fire time of its gate is in flight, and not run', async () => {
    const store = new MemoryStore();
    const job = 'overtaken';
    const now = Date.now();
    const occ = (fireTime: number): OccurrenceId => ({
      job,
      scheduleId: undefined,
      fireTime,
      shard: undefined,
    });
    const older = occ(now - 5_000);
    const newer = occ(now - 4_000);
    // The newer fire time runs on another node: its occurrence and the gate held, its in-flight record written.
    const [lease, gate] = await store.acquire([
      { key: keys.occurrence(newer), owner: 'other', leaseMs: 60_000 },
      { key: keys.runGate(job, gateScope(newer), undefined), owner: 'other', leaseMs: 60_000 },
    ]);
    expect(lease && gate).toBeTruthy();
    await store.put(
      keys.inflight(newer),
      JSON.stringify({
        job,
        fireTime: newer.fireTime,
        attempt: 1,
        token: lease!.token,
        node: 'other',
        source: 'schedule',
        startedAt: lease!.acquiredAt,
        claimedAt: lease!.acquiredAt,
        leaseMs: 60_000,
      }),
    );
    // The older one still queued behind the run before it (its pending record, as overlap.ts writes it).
    await store.put(
      keys.pending(job, gateScope(older), undefined, older.fireTime),
      JSON.stringify({ ...older, source: 'schedule' }),
    );
    scheduler = createScheduler({ store, node: 'me', pollInterval: '100ms' });
    const ran: number[] = [];
    const skipped: number[] = [];
    scheduler.define(job, { every: '1h', overlap: 'queue' }, (ctx) => {
      ran.push(ctx.fireTime.getTime());
    });
    scheduler.on('skipped', (e) => skipped.push(e.fireTime.getTime()));
    await scheduler.start();
    expect(await until(() => skipped.includes(older.fireTime), 5_000)).toBe(true);
    expect(ran).toEqual([]);
    const history = await scheduler.history({ job });
    expect(history.find((h) => h.fireTime.getTime() === older.fireTime)?.status).toBe('skipped');
    expect(await store.scan(keys.pendingPrefix(job))).toEqual([]);
  });
});
