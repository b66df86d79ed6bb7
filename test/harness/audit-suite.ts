/**
 * The audit trail (`scheduler.audit()`, issue 32 item 8), run against one backend per test file:
 * `describeAudit(name, openStore)`. Every test uses its own job names and schedule ids, and reads
 * through the job or schedule filter (other suites write entries to the same store meanwhile).
 */
import { describe, expect, it } from 'vitest';
import { OncelyError } from '../../src/core/errors.js';
import { randomId } from '../../src/core/ids.js';
import { createScheduler, type Scheduler } from '../../src/scheduler/index.js';
import type { SchedulerOptions } from '../../src/scheduler/types.js';
import type { Store, WriteOp } from '../../src/store/types.js';
import type { OpenStore } from './scheduler-suite.js';

export interface AuditSuiteOptions {
  /** Skip the suite with this reason (server unavailable outside CI). */
  skip?: string | undefined;
}

/** A store whose `apply` calls are counted (ops per call). */
function counting(store: Store): Store & { applies: number[] } {
  const applies: number[] = [];
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'applies') return applies;
      if (prop === 'apply')
        return (ops: WriteOp[]) => {
          applies.push(ops.length);
          return target.apply(ops);
        };
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as Store & { applies: number[] };
}

export function describeAudit(name: string, open: OpenStore, options: AuditSuiteOptions = {}): void {
  (options.skip ? describe.skip : describe.concurrent)(`audit trail: ${name}`, () => {
    const unique = (label: string) => `${label}-${randomId(5)}`;

    function test(title: string, body: (node: Node) => Promise<void>, timeoutMs = 30_000): void {
      it(
        title,
        async () => {
          const schedulers: Scheduler[] = [];
          const stores: Store[] = [];
          const node: Node = async (id, more = {}) => {
            const store = counting(await open());
            stores.push(store);
            const s = createScheduler({ store, node: id, pollInterval: '100ms', logger: false, ...more });
            schedulers.push(s);
            return { s, store };
          };
          try {
            await body(node);
          } finally {
            await Promise.all(schedulers.map((s) => s.stop().catch(() => {})));
            await Promise.all(stores.map((s) => s.close().catch(() => {})));
          }
        },
        timeoutMs,
      );
    }

    test('define: a job new to the store or changed is recorded once, by the node (or its actor); an unchanged one is not', async (node) => {
      const job = unique('def');
      const handler = async () => {};
      const a = (await node(unique('n1'))).s.define(job, { every: '1h' }, handler);
      await a.start();
      let entries = await a.audit({ job });
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ action: 'define', actor: a.node, target: job, job });
      expect(entries[0]!.after).toMatchObject({ name: job, trigger: { every: '1h' } });
      expect(entries[0]!.before).toBeUndefined();
      // Another node with the same definition: nothing changed, nothing recorded.
      const b = (await node(unique('n2'))).s.define(job, { every: '1h' }, handler);
      await b.start();
      expect(await a.audit({ job })).toHaveLength(1);
      // A changed definition, by a node with an actor of its own.
      const c = (await node(unique('n3'), { actor: 'deploy-42' })).s.define(
        job,
        { every: '2h', retries: 1 },
        handler,
      );
      await c.start();
      entries = await a.audit({ job });
      expect(entries.map((e) => e.action)).toEqual(['define', 'define']);
      expect(entries[0]).toMatchObject({ actor: 'deploy-42' });
      expect(entries[0]!.before).toMatchObject({ trigger: { every: '1h' }, options: { retries: 0 } });
      expect(entries[0]!.after).toMatchObject({ trigger: { every: '2h' }, options: { retries: 1 } });
    });

    test('pause, resume, trigger: actor from the call, else the scheduler, else the node; note kept with the pause', async (node) => {
      const job = unique('ctl');
      const { s } = await node(unique('ctl-node'));
      const { s: withActor } = await node(unique('ctl-node2'), { actor: 'ops-bot' });
      await s.pause(job, { note: 'mail provider down', actor: 'alice' });
      await withActor.resume(job);
      await s.trigger(job, { data: { user: 42 }, actor: 'bob' });
      await s.pause(job);
      const entries = await s.audit({ job });
      expect(entries.map((e) => [e.action, e.actor])).toEqual([
        ['pause', s.node],
        ['trigger', 'bob'],
        ['resume', 'ops-bot'],
        ['pause', 'alice'],
      ]);
      const [, trigger, resume, pause] = entries;
      expect(pause).toMatchObject({
        target: job,
        job,
        note: 'mail provider down',
        before: { paused: false },
        after: { paused: true, by: 'alice', note: 'mail provider down' },
      });
      expect(resume).toMatchObject({ before: { paused: true, by: 'alice' }, after: { paused: false } });
      expect(trigger!.after).toMatchObject({ data: { user: 42 } });
      // Newest first, and `after` pages on exactly.
      const ids = entries.map((e) => e.id);
      expect([...ids].sort().reverse()).toEqual(ids);
      const page1 = await s.audit({ job, limit: 3 });
      const page2 = await s.audit({ job, limit: 3, after: page1.at(-1)!.id });
      expect([...page1, ...page2].map((e) => e.id)).toEqual(ids);
      // The unfiltered trail is newest first too, and starts no older than this test's last entry.
      const all = await s.audit({ limit: 50 });
      expect(all.map((e) => e.id)).toEqual(
        all
          .map((e) => e.id)
          .sort()
          .reverse(),
      );
      expect(all[0]!.id >= ids[0]!).toBe(true);
    });

    test('pause since/actor/note show in jobs()', async (node) => {
      const job = unique('jobs');
      const { s } = await node(unique('jobs-node'));
      s.define(job, { every: '1h' }, async () => {});
      await s.start();
      await s.pause(job, { note: 'until Monday', actor: 'carol' });
      const info = (await s.jobs()).find((j) => j.name === job);
      expect(info).toMatchObject({ paused: true, pause: { actor: 'carol', note: 'until Monday' } });
      expect(info!.pause!.since).toBeInstanceOf(Date);
      await s.resume(job);
      expect((await s.jobs()).find((j) => j.name === job)!.pause).toBeUndefined();
    });

    test('schedules: upsert and remove recorded with before/after (data capped), filtered by id; an unchanged re-upsert adds nothing', async (node) => {
      const job = unique('sch');
      const id = unique('user');
      const { s } = await node(unique('sch-node'), { actor: 'api' });
      await s.schedules.upsert({ id, job, every: '1m', data: { user: 7 } }, { actor: 'carol' });
      // The same schedule again, its fields in another order: no entry.
      await s.schedules.upsert({ data: { user: 7 }, every: '1m', job, id });
      await s.schedules.upsert([{ id, job, every: '2m', data: { user: 7 } }]);
      await s.schedules.upsert({ id, job, every: '2m', data: { blob: 'x'.repeat(5000) } });
      expect(await s.schedules.remove(id, { actor: 'dave' })).toBe(true);
      expect(await s.schedules.remove(id, { actor: 'dave' })).toBe(false);
      const entries = await s.audit({ scheduleId: id });
      expect(entries.map((e) => [e.action, e.actor])).toEqual([
        ['schedules.remove', 'dave'],
        ['schedules.upsert', 'api'],
        ['schedules.upsert', 'api'],
        ['schedules.upsert', 'carol'],
      ]);
      const [remove, big, changed, created] = entries;
      expect(created).toMatchObject({
        target: id,
        job,
        scheduleId: id,
        after: { id, job, every: '1m', data: { user: 7 } },
      });
      expect(created!.before).toBeUndefined();
      expect(changed).toMatchObject({ before: { every: '1m' }, after: { every: '2m' } });
      expect(big!.after).toMatchObject({ data: { truncated: true, bytes: 5011 } });
      expect(remove).toMatchObject({ before: { id, every: '2m', data: { truncated: true } } });
      expect(remove!.after).toBeUndefined();
      // By job, the schedule's entries are there too; by another job's name with this id, none.
      expect((await s.audit({ job })).map((e) => e.id)).toEqual(entries.map((e) => e.id));
      expect(await s.audit({ job: unique('other'), scheduleId: id })).toEqual([]);
    });

    test('a bulk upsert writes its entries in its own batched applies (bounded), and adds none when nothing changed', async (node) => {
      const job = unique('bulk');
      const { s, store } = await node(unique('bulk-node'));
      const list = Array.from({ length: 700 }, (_, i) => ({
        id: `${job}:${i}`,
        job,
        every: '1h',
        data: { i },
      }));
      await s.schedules.upsert(list);
      const firstApplies = [...store.applies];
      expect(firstApplies.every((n) => n <= 1000)).toBe(true);
      // 700 schedules × (3 writes + 3 audit records) in 1,000-op applies, plus the change signal.
      expect(firstApplies.length).toBeLessThanOrEqual(Math.ceil((700 * 6) / 990) + 3);
      expect(await s.audit({ job, limit: 1000 })).toHaveLength(700);
      expect(await s.audit({ scheduleId: `${job}:699` })).toHaveLength(1);
      store.applies.length = 0;
      await s.schedules.upsert(list);
      // Unchanged: one apply per 332 schedules and the signal, as without an audit trail.
      expect(store.applies).toHaveLength(Math.ceil(700 / 332) + 1);
      expect(await s.audit({ job, limit: 1000 })).toHaveLength(700);
    });

    test('bad input: actor, note, query -> INVALID_ARGUMENT naming what to fix; nothing written', async (node) => {
      const job = unique('bad');
      const { s, store } = await node(unique('bad-node'));
      const bad = async (call: () => Promise<unknown>, message: RegExp) => {
        const err = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(OncelyError);
        expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
        expect((err as OncelyError).message).toMatch(message);
      };
      const long = 'a'.repeat(256);
      await bad(() => s.pause(job, { actor: long }), /pause\(.*\): actor must be 1-255 printable characters/);
      await bad(
        () => s.pause(job, { note: 'n'.repeat(1001) }),
        /note must be text of at most 1000 characters/,
      );
      await bad(() => s.resume(job, { actor: '' }), /actor must be 1-255/);
      await bad(() => s.trigger(job, { actor: 42 as never }), /actor must be 1-255/);
      await bad(
        () => s.schedules.upsert({ id: `${job}:1`, job, every: '1m' }, { actor: long }),
        /schedules.upsert: actor must be/,
      );
      await bad(
        () => s.schedules.remove(`${job}:1`, { actr: 'x' } as never),
        /unknown schedules.remove option "actr"/,
      );
      await bad(() => s.audit({ limit: 0 }), /limit must be a whole number from 1 to 1000/);
      await bad(() => s.audit({ after: 'yesterday' }), /after must be the id of an audit entry/);
      await bad(() => s.audit({ jb: job } as never), /unknown audit option "jb"/);
      expect(() => createScheduler({ store, actor: long })).toThrow(/createScheduler: actor must be 1-255/);
      expect(() => createScheduler({ store, auditRetention: 'soon' })).toThrow(OncelyError);
      expect(await s.audit({ job })).toEqual([]);
      expect(await s.schedules.get(`${job}:1`)).toBeUndefined();
    });
  });
}

type Node = (
  id: string,
  more?: Partial<SchedulerOptions>,
) => Promise<{ s: Scheduler; store: Store & { applies: number[] } }>;
