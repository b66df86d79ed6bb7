/**
 * A job's own fire time is claimed ahead of it (src/scheduler/due/claim-lead.ts): the claim and the
 * in-flight record are paid before the fire time, and the handler waits for it. Judged from the
 * outside, on the memory store and on PostgreSQL, one node:
 *  - the in-flight record (what `history()` shows as running) is on the store before the fire
 *    time, and the handler starts at the fire time on the store's clock, never before it;
 *  - a previous run that ends inside the claim lead (its gate refused to the claim ahead) does not
 *    make the fire time skipped or late: it is claimed again at its start and runs on time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../src/index.js';
import { CLAIM_LEAD_MS } from '../src/scheduler/due/claim-lead.js';
import { keys } from '../src/scheduler/keys.js';
import type { Store, WriteOp } from '../src/store/types.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { checkedHistory, pageNode, sleep, stopNodes, unique } from './harness/page-kit.js';
import { until } from './harness/scheduler-suite.js';

afterEach(stopNodes);

/** `store` with every in-flight record put noted: its key, and the store's time just before the call. */
function watched(store: Store): { store: Store; inflightPuts: { key: string; at: number }[] } {
  const inflightPuts: { key: string; at: number }[] = [];
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'apply')
        return async (ops: WriteOp[]) => {
          const at = await target.now();
          for (const op of ops)
            if (op.op === 'put' && op.key.startsWith(keys.inflightPrefix()))
              inflightPuts.push({ key: op.key, at });
          return target.apply(ops);
        };
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: proxy, inflightPuts };
}

const backends: { name: string; open: () => Promise<Store>; skip?: string | undefined }[] = [
  { name: 'memory', open: () => openStore(`memory:${unique('lead')}`) },
  (() => {
    const pg = serverBackend('postgres');
    return {
      name: 'postgres',
      open: () => openStore(pg.url!, { prefix: testPrefix('lead') }),
      skip: pg.skip,
    };
  })(),
];

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(`claimed ahead: ${backend.name}`, () => {
    it('the in-flight record is stored before the fire time, and the handler starts at it, never before', async () => {
      const base = await backend.open();
      const { store, inflightPuts } = watched(base);
      const job = unique('ahead');
      const started: { fireTime: number; at: number }[] = [];
      const s = pageNode(store, unique('n'));
      s.define(job, { every: '1s' }, async (ctx) => {
        started.push({ fireTime: ctx.fireTime.getTime(), at: await base.now() });
      });
      await s.start();
      await until(() => started.length >= 4, 15_000, 'four fire times');
      await s.stop();
      for (const r of started) expect(r.at, 'never before its fire time').toBeGreaterThanOrEqual(r.fireTime);
      // The first fire time after start may come before the node's first tick; the others were
      // claimed ahead: their in-flight records were written before their fire times (the lead is
      // 250 ms; an idle node needs a few ms of it).
      const later = started.slice(1);
      const aheadOf = (fireTime: number) =>
        inflightPuts.find((p) => p.key.includes(String(fireTime).padStart(15, '0')))?.at;
      for (const r of later) {
        const put = aheadOf(r.fireTime);
        expect(put, `in-flight record of ${r.fireTime}`).toBeDefined();
        expect(put!, 'written before its fire time').toBeLessThan(r.fireTime);
        expect(put!, 'within the lead').toBeGreaterThanOrEqual(r.fireTime - CLAIM_LEAD_MS - 50);
      }
      await checkedHistory(s, job, 30_000);
      await base.close();
    }, 30_000);

    it('a previous run that ends inside the lead: the fire time still runs, on time, not skipped', async () => {
      const base = await backend.open();
      const job = unique('tight');
      const started: { fireTime: number; at: number; end?: number | undefined }[] = [];
      const s = pageNode(base, unique('n'));
      // Each run ends 100 ms before the next fire time: inside the lead, so the claim ahead finds
      // the gate held and must not judge the overlap then.
      s.define(job, { every: '1s', overlap: 'skip' }, async (ctx) => {
        const run = {
          fireTime: ctx.fireTime.getTime(),
          at: await base.now(),
          end: undefined as number | undefined,
        };
        started.push(run);
        const end = ctx.fireTime.getTime() + 900;
        while ((await base.now()) < end) await sleep(Math.max(1, Math.min(20, end - (await base.now()))));
        run.end = await base.now();
      });
      await s.start();
      await until(() => started.length >= 5, 20_000, 'five fire times');
      await s.stop();
      const history = await checkedHistory(s, job, 30_000);
      // On a loaded host a run can overrun its 900 ms (its loop waits for the event loop) and end
      // after the next fire time: that fire time is then rightly skipped, and its skip must name
      // a run still going at it. Every fire time whose previous run ended before it ran, on time.
      const timeline = started
        .map((r) => `${r.fireTime % 100_000}:+${r.at - r.fireTime}..+${(r.end ?? 0) - r.fireTime}`)
        .join(' ');
      const skipped = history.filter((e) => e.status === 'skipped');
      for (const e of skipped) {
        const f = e.fireTime.getTime();
        expect(
          started.some((r) => r.fireTime < f && (r.end === undefined || r.end >= f)),
          `skipped ${f % 100_000} with no run going at it: ${timeline}`,
        ).toBe(true);
      }
      for (let i = 1; i < started.length; i++) {
        const prev = started[i - 1]!;
        const r = started[i]!;
        if (prev.end !== undefined && prev.end < prev.fireTime + 1_000) {
          expect(
            r.fireTime - prev.fireTime,
            `the fire time after ${prev.fireTime % 100_000}: ${timeline}`,
          ).toBe(1_000);
          expect(r.at).toBeGreaterThanOrEqual(r.fireTime);
          expect(
            r.at - r.fireTime,
            `started on time (a wait behind the gate costs a poll): ${timeline}`,
          ).toBeLessThan(150);
        }
      }
      // The host was calm enough to test what this is about: most runs ended inside the lead.
      const inLead = started.filter((r) => r.end !== undefined && r.end < r.fireTime + 1_000).length;
      expect(inLead, timeline).toBeGreaterThanOrEqual(3);
      await base.close();
    }, 40_000);
  });
}
