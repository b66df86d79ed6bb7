import { silentLogger } from '../../core/logger.js';
import { createScheduler, type Scheduler } from '../../scheduler/scheduler.js';
import type { JobContext } from '../../scheduler/types.js';
import type { Store } from '../../store/types.js';
import { type History, type Invocation, occKey } from './history.js';
import type { SimContext, SimJob } from './options.js';
import { Rng } from './random.js';
import { type LinkFaults, NodeStore } from './sim-store.js';
import { NodeClock, type VirtualTime } from './virtual-time.js';

/** What every node of one simulation shares. */
export interface World {
  seed: number;
  time: VirtualTime;
  server: Store;
  history: History;
  jobs: SimJob[];
  scheduler: { pollInterval?: number | string; concurrency?: number };
  stall: { rate: number; ms: number };
}

export interface NodeCounters {
  storeCalls: number;
  lostRequests: number;
  lostReplies: number;
  schedulerErrors: number;
}

/**
 * One simulated service instance: a real `Scheduler` on a `NodeStore` and a `NodeClock`. A crash
 * freezes the incarnation for good (its clock and store never answer again, so none of its code
 * runs on); a restart is a fresh `createScheduler` — a new process — with the same or a new id.
 */
export class SimNode {
  label = '';
  private incarnation = 0;
  private clock: NodeClock | undefined;
  private store: NodeStore | undefined;
  private scheduler: Scheduler | undefined;
  private readonly running = new Set<Invocation>();

  constructor(
    private readonly world: World,
    readonly index: number,
    private readonly link: LinkFaults,
    private readonly drift: number,
    private readonly skew: number,
    private readonly counters: NodeCounters,
  ) {}

  get up(): boolean {
    return this.clock?.alive ?? false;
  }

  /** Starts a new incarnation (a process start), retrying start() every second while the store is away. */
  boot(newId: boolean): void {
    const w = this.world;
    this.incarnation++;
    const base = `n${this.index + 1}`;
    const id = newId ? `${base}-${this.incarnation}` : base;
    this.label = newId || this.incarnation === 1 ? id : `${id}(${this.incarnation})`;
    const tag = `${this.index}:${this.incarnation}`;
    const stallRng = Rng.derive(w.seed, `stall:${tag}`);
    const clock = new NodeClock(w.time, 1 + this.drift, this.skew, () =>
      stallRng.chance(w.stall.rate) ? stallRng.between(0, w.stall.ms) : 0,
    );
    const label = this.label;
    const store = new NodeStore(
      w.server,
      w.time,
      clock,
      Rng.derive(w.seed, `net:${tag}`),
      this.link,
      (what) => w.history.line(label, what),
      {
        applied: (ops, results, notHeld) => w.history.applied(label, ops, results, notHeld),
        pageLeasesOf: (ops) => w.history.pageLeasesOf(ops),
        claimed: (lease, ops, claim) => w.history.claimed(label, lease, ops, claim),
        granted: (leases) => w.history.granted(label, leases),
      },
    );
    const random = Rng.derive(w.seed, `scheduler:${tag}`);
    const scheduler = createScheduler({
      store,
      node: id,
      clock,
      random: () => random.next(),
      logger: silentLogger,
      ...w.scheduler,
    });
    const handlerRng = Rng.derive(w.seed, `handler:${tag}`);
    const sim: SimContext = {
      sleep: (ms, signal) => clock.sleep(ms, signal),
      random: () => handlerRng.next(),
      now: () => w.time.now,
    };
    for (const job of w.jobs) scheduler.define(job.name, job.options, (ctx) => this.invoke(job, ctx, sim));
    this.listen(scheduler);
    this.clock = clock;
    this.store = store;
    this.scheduler = scheduler;
    w.history.line(label, `boot     (drift ${(this.drift * 100).toFixed(2)}%)`);
    const start = () => {
      scheduler.start().then(
        () => w.history.line(label, 'started'),
        (err: unknown) => {
          w.history.line(
            label,
            `start failed (${err instanceof Error ? err.message : String(err)}); retry in 1 s`,
          );
          void clock.sleep(1_000).then(start);
        },
      );
    };
    start();
  }

  /** Kills the incarnation: no stop(), no drain; what it had in flight on the network still lands. */
  crash(): void {
    if (!this.clock?.alive) return;
    this.clock.alive = false;
    this.store!.alive = false;
    this.collect();
    this.world.history.line(this.label, 'CRASH');
    for (const inv of this.running) this.world.history.end(inv, 'crashed');
    this.running.clear();
  }

  /** Freezes the node at the end of the simulation (without a trace line). */
  halt(): void {
    if (!this.clock) return;
    this.clock.alive = false;
    this.store!.alive = false;
    this.collect();
  }

  private collect(): void {
    const s = this.store!;
    this.counters.storeCalls += s.calls;
    this.counters.lostReplies += s.lostReplies;
    this.counters.lostRequests += s.lostRequests;
    s.calls = s.lostReplies = s.lostRequests = 0;
  }

  private async invoke(job: SimJob, ctx: JobContext, sim: SimContext): Promise<unknown> {
    const h = this.world.history;
    const fireTime = ctx.fireTime.getTime();
    const occ = occKey(ctx.job, fireTime, ctx.shard?.index, ctx.scheduleId);
    const inv = h.start({
      occ,
      job: ctx.job,
      scheduleId: ctx.scheduleId,
      fireTime,
      scheduledAt: ctx.scheduledAt.getTime(),
      shard: ctx.shard?.index,
      node: this.label,
      attempt: ctx.attempt,
      token: ctx.token,
      source: this.sourceOf(occ, ctx),
    });
    const clock = this.clock!;
    this.running.add(inv);
    ctx.signal.addEventListener(
      'abort',
      () => {
        if (clock.alive) h.aborted(inv, reasonOf(ctx.signal.reason));
      },
      { once: true },
    );
    try {
      const value = await (job.handler ? job.handler(ctx, sim) : defaultWork(job, ctx, sim));
      if (clock.alive) h.end(inv, 'ok');
      return value;
    } catch (err) {
      if (clock.alive) h.end(inv, 'error');
      throw err;
    } finally {
      this.running.delete(inv);
    }
  }

  /**
   * The `started` event carries the run's source; the handler's ctx does not, so it is looked up
   * there — by occurrence too: the runs of a page share its token.
   */
  private readonly sources = new Map<string, string>();
  private sourceOf(occ: string, ctx: JobContext): Invocation['source'] {
    return (this.sources.get(`${occ}/${ctx.token}/${ctx.attempt}`) ?? 'schedule') as Invocation['source'];
  }

  private listen(scheduler: Scheduler): void {
    const h = this.world.history;
    const label = this.label;
    scheduler.on('started', (e) => {
      const occ = occKey(e.job, e.fireTime.getTime(), e.shard, e.scheduleId);
      this.sources.set(`${occ}/${e.token}/${e.attempt}`, e.source);
    });
    scheduler.on('succeeded', (e) => {
      const occ = occKey(e.job, e.fireTime.getTime(), e.shard, e.scheduleId);
      h.outcome(
        {
          kind: 'succeeded',
          node: label,
          job: e.job,
          occ,
          fireTime: e.fireTime.getTime(),
          token: e.token,
          attempt: e.attempt,
        },
        ` token=${e.token} attempt=${e.attempt}`,
      );
    });
    scheduler.on('failed', (e) => {
      const occ = occKey(e.job, e.fireTime.getTime(), e.shard, e.scheduleId);
      h.outcome(
        {
          kind: 'failed',
          node: label,
          job: e.job,
          occ,
          fireTime: e.fireTime.getTime(),
          token: e.token,
          attempt: e.attempt,
          final: !e.willRetry,
        },
        ` token=${e.token} attempt=${e.attempt}${e.willRetry ? ' (will retry)' : ''}`,
      );
    });
    scheduler.on('skipped', (e) => {
      const occ = occKey(e.job, e.fireTime.getTime(), e.shard, e.scheduleId);
      h.outcome(
        { kind: 'skipped', node: label, job: e.job, occ, fireTime: e.fireTime.getTime() },
        ` (${e.reason})`,
      );
    });
    scheduler.on('misfired', (e) => {
      const occ = occKey(e.job, e.fireTime.getTime(), undefined, e.scheduleId);
      h.outcome(
        {
          kind: 'misfired',
          node: label,
          job: e.job,
          scheduleId: e.scheduleId,
          occ,
          fireTime: e.fireTime.getTime(),
          firstFireTime: e.firstFireTime.getTime(),
          action: e.action,
        },
        ` ${e.action}${e.count === undefined || e.count === 1 ? '' : ` ${e.count} fire times`}`,
      );
    });
    scheduler.on('error', () => {
      this.counters.schedulerErrors++;
    });
  }
}

function reasonOf(reason: unknown): string {
  if (reason && typeof reason === 'object' && 'code' in reason)
    return String((reason as { code: unknown }).code);
  return reason instanceof Error ? reason.message : 'aborted';
}

/** The default handler: works for a while, honouring its signal; may fail. */
async function defaultWork(job: SimJob, ctx: JobContext, sim: SimContext): Promise<void> {
  const [min, max] = job.runMs ?? [20, 300];
  await sim.sleep(min + (max - min) * sim.random(), ctx.signal);
  if (ctx.signal.aborted) throw ctx.signal.reason;
  if (job.failRate !== undefined && sim.random() < job.failRate) throw new Error('simulated handler failure');
}
