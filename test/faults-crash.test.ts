/**
 * A node that dies at an exact moment of a run, in-process: its store (a wrapper over a shared
 * memory space) stops answering at the write batch named, so from then on the node does nothing
 * the store can see — no start record, no keep-alive, no finish — as after a SIGKILL. A second node
 * on the same space must then do the right thing. (A node SIGKILLed while its handler runs, in a
 * real child process, is the scheduler suite's "recovers an occurrence whose node was SIGKILLed
 * mid-run".)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';
import { createScheduler, type Scheduler } from '../src/scheduler/index.js';
import type { JobContext } from '../src/scheduler/types.js';
import { MemoryStore } from '../src/store/memory.js';
import type { Store } from '../src/store/types.js';
import { sleep } from '../src/testing/suite-context.js';
import { until } from './harness/scheduler-suite.js';

interface Dying extends Store {
  death: { dead: boolean; batch?: { op: string; key: string; value?: string }[] };
}

/** A store that never answers again from the first `apply` whose ops match `at` (that one included). */
function diesAt(store: Store, at: (ops: { op: string; key: string }[]) => boolean): Dying {
  const death: Dying['death'] = { dead: false };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'death') return death;
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'close') return value;
      return (...args: unknown[]) => {
        if (!death.dead && prop === 'apply' && at(args[0] as { op: string; key: string }[])) {
          death.dead = true;
          death.batch = args[0] as NonNullable<Dying['death']['batch']>;
        }
        if (death.dead) return new Promise(() => {});
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as Dying;
}

/**
 * A store whose first `acquire` call for a key under `prefix` reaches the store `ms` late (only
 * the first: a node whose claims all take longer than their lease can never be sure it holds one,
 * and rightly gives each grant up).
 */
function slowAcquire(store: Store, prefix: string, ms: number): Store {
  let slowed = false;
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== 'acquire') return value;
      return async (requests: Parameters<Store['acquire']>[0]) => {
        if (!slowed && requests.some((r) => r.key.startsWith(prefix))) {
          slowed = true;
          await new Promise((r) => setTimeout(r, ms));
        }
        return target.acquire(requests);
      };
    },
  });
}

/**
 * A store whose write batches that release a lease under `prefix` reach the store `ms` late (a
 * node's "give the claim up" writes, slow on a loaded link).
 */
function slowRelease(store: Store, prefix: string, ms: number): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== 'apply') return value;
      return async (ops: Parameters<Store['apply']>[0]) => {
        if (ops.some((o) => o.op === 'release' && o.key.startsWith(prefix)))
          await new Promise((r) => setTimeout(r, ms));
        return target.apply(ops);
      };
    },
  });
}

interface Run {
  node: string;
  fireTime: number;
  attempt: number;
  token: number;
  storeNow: number;
}

const live: Scheduler[] = [];
afterEach(async () => {
  // The dead node never answers stop(): only the live ones are stopped.
  await Promise.all(live.splice(0).map((s) => s.stop()));
});

/** A node on `store` defining `job` (`at` F, lease `lease`, recover); its runs go to `runs`. */
function node(store: Store, name: string, job: string, at: number, runs: Run[], lease = '1s'): Scheduler {
  const s = createScheduler({ store, node: name, pollInterval: '100ms' });
  s.define(job, { at, lockAtMostFor: lease, misfireThreshold: '10s' }, async (ctx: JobContext) => {
    runs.push({
      node: name,
      fireTime: ctx.fireTime.getTime(),
      attempt: ctx.attempt,
      token: ctx.token,
      storeNow: await store.now(),
    });
  });
  return s;
}

describe('a node that dies at an exact moment of a run (memory store)', () => {
  /**
   * Node a claims F first and dies at its start batch; node b, live too, has its first claim reach
   * the store `lateMs` late (after the spread grace of at most 1 s in which a node that is not the
   * fire time's first choice waits). Both with lease `lease`; b's runs go to `runs`.
   */
  async function diesBeforeStart(job: string, lease: string, lateMs = 1_500, wrapB = (s: Store) => s) {
    const space = `crash-${randomId(6)}`;
    const inflight = `ctl|run|${job}|`;
    const dying = diesAt(new MemoryStore({ space }), (ops) =>
      ops.some((o) => o.op === 'put' && o.key.startsWith(inflight)),
    );
    const other = wrapB(slowAcquire(new MemoryStore({ space }), `occ|${job}|`, lateMs));
    const runs: Run[] = [];
    const F = (await other.now()) + 500;
    const a = node(dying, 'a', job, F, runs, lease);
    const b = node(other, 'b', job, F, runs, lease);
    live.push(b);
    await Promise.all([a.start(), b.start()]);
    return { dying, inflight, runs, F };
  }

  it('before the start record: another node runs the fire time after the lease, with a higher token', async () => {
    // Well inside the 3 s lease: a wins the claim, b is refused it. b's claim comes 2.5 s late:
    // with 1.5 s, a's claim after the grace lost the race to it once on a loaded CI machine
    // (timed out waiting for a to die), leaving a tick's lag of half a second.
    const { dying, inflight, runs, F } = await diesBeforeStart('before-start', '3s', 2_500);
    await until(() => dying.death.dead, 8_000, 'node a to claim and die at its start batch');
    const claim = JSON.parse(dying.death.batch!.find((o) => o.key.startsWith(inflight))!.value!) as {
      token: number;
      claimedAt: number;
      leaseMs: number;
    };
    await until(() => runs.length > 0, 15_000, 'node b to run it');
    const [run] = runs;
    expect(runs).toHaveLength(1);
    expect(run).toMatchObject({ node: 'b', fireTime: F, attempt: 1 });
    expect(run!.token).toBeGreaterThan(claim.token);
    // Not before a's lease ended on the store clock.
    expect(run!.storeNow).toBeGreaterThanOrEqual(claim.claimedAt + claim.leaseMs);
  }, 30_000);

  it.each([
    ['', (s: Store) => s],
    // b's run that could not start gives the claim up (a release) 600 ms late: a tick in between
    // found the claim held by b and still running there, and forgot it — then the release freed
    // it, and nobody ran it (once in CI; 3 of ~53 looped runs under load, without the slow release).
    [', also when giving the claim up is slow', (s: Store) => slowRelease(s, 'occ|late-answer|', 600)],
  ])(
    'a claim won whose answer came after its own lease is offered again, not dropped%s',
    async (_, wrapB) => {
      // b's late claim arrives after a's 1 s lease: b wins it, but the answer comes after b's own
      // lease — b must not run on it, and must not drop it either (nobody else will: a is dead).
      const { runs, F } = await diesBeforeStart('late-answer', '1s', 1_500, wrapB);
      // What b decided meanwhile, for a failure's message (it missed the 15 s once on a loaded CI
      // run, with nothing to say why: a misfire skip past the 10 s threshold? errors?).
      const seen: string[] = [];
      const b = live.at(-1)!;
      for (const event of ['misfired', 'skipped', 'error', 'failed'] as const)
        b.on(event, (e: object) =>
          seen.push(`${event} ${JSON.stringify(e, (_k, v) => (v instanceof Error ? v.message : v))}`),
        );
      await until(() => runs.length > 0, 15_000, 'node b to run it').catch((err: Error) => {
        throw new Error(`${err.message}; node b's events: ${seen.join(' | ') || 'none'}`);
      });
      await sleep(1_500);
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatchObject({ node: 'b', fireTime: F });
      expect(runs[0]!.storeNow).toBeGreaterThanOrEqual(F);
    },
    30_000,
  );

  it('after the handler, before the finish batch: recovered with attempt + 1 and a higher token (the handler ran twice)', async () => {
    const space = `crash-${randomId(6)}`;
    const job = 'before-finish';
    const inflight = `ctl|run|${job}|`;
    const dying = diesAt(new MemoryStore({ space }), (ops) =>
      ops.some((o) => o.op === 'delete' && o.key.startsWith(inflight)),
    );
    const other = new MemoryStore({ space });
    const runs: Run[] = [];
    const F = (await other.now()) + 300;
    const a = node(dying, 'a', job, F, runs);
    await a.start();
    await until(() => dying.death.dead, 5_000, 'node a to run and die at its finish batch');
    const b = node(other, 'b', job, F, runs);
    live.push(b);
    const recovered = new Promise<string>((resolve) => b.on('succeeded', (e) => resolve(e.source)));
    await b.start();
    await until(() => runs.length > 1, 20_000, 'node b to recover it');
    expect(runs).toHaveLength(2);
    const [first, second] = runs;
    expect(first).toMatchObject({ node: 'a', fireTime: F, attempt: 1 });
    expect(second).toMatchObject({ node: 'b', fireTime: F, attempt: 2 });
    // At-least-once after a crash: the handler ran twice; the fencing token tells the runs apart.
    expect(second!.token).toBeGreaterThan(first!.token);
    // Not before a's lease (1 s, no longer kept alive) ended.
    expect(second!.storeNow - first!.storeNow).toBeGreaterThanOrEqual(900);
    expect(await recovered).toBe('recover');
    const history = await b.history({ job });
    // b also records a's attempt as abandoned, for the history to show what happened.
    expect(history.map((h) => [h.node, h.attempt, h.status])).toEqual([
      ['b', 2, 'succeeded'],
      ['a', 1, 'abandoned'],
    ]);
  }, 30_000);
});
