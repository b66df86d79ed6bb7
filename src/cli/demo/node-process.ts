/**
 * One node of `oncely demo`: a separate process, started by the demo as
 * `node dist/cli/demo/node-process.js --node node-1 --db PATH --ledger PATH --index 0 --count 3` with
 * an IPC channel.
 * It opens the shared SQLite file, defines the sample jobs, starts a scheduler, and reports what
 * it does to the parent. SIGTERM (or the parent going away) stops it gracefully: running handlers
 * finish, then it exits. SIGINT is ignored: in a terminal, Ctrl-C reaches the whole process group
 * and the parent decides how the demo ends.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { type Clock, systemClock } from '../../core/clock.js';
import { createScheduler } from '../../scheduler/scheduler.js';
import type { RunEvent } from '../../scheduler/types.js';
import { openStore } from '../../store/open.js';
import { LedgerWriter, occurrenceKey } from './ledger.js';
import type { NodeArgs, NodeMessage, ParentMessage, RunInfo } from './protocol.js';
import { DEMO_JOBS, jobOptions, POLL_INTERVAL_MS, STOP_TIMEOUT_MS } from './sample-jobs.js';

/** A handler of this node that has not yet been recorded as succeeded. */
interface ActiveRun {
  job: string;
  /** `working`: in its sleep; `finishing`: ledger line written, success not yet recorded in the store. */
  phase: 'working' | 'finishing';
  startedAt: number;
  finishingSince: number;
  workMs: number;
}

function send(message: NodeMessage): void {
  if (!process.connected || !process.send) return;
  try {
    process.send(message);
  } catch {
    // The parent is gone; 'disconnect' stops this node.
  }
}

function text(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function runInfo(e: RunEvent): RunInfo {
  return {
    job: e.job,
    fireTime: e.fireTime.getTime(),
    shard: e.shard ?? null,
    attempt: e.attempt,
    token: e.token,
    source: e.source,
  };
}

function runKey(job: string, fireTime: number, shard: number | null | undefined, token: number): string {
  return `${occurrenceKey(job, fireTime, shard)}#${token}`;
}

/**
 * The system clock, with wake-ups staggered by node, in an order that rotates every second.
 * Processes on one idle machine wake at the same instant for a fire time and the same one tends
 * to win every claim (on real machines, nodes differ by more than this anyway); the stagger lets
 * the work visibly move between nodes, each fire time favouring another one. It decides nothing
 * else: which node wins is still settled by the store, lease maths uses the store's clock, and the
 * delay (at most 120 ms in all) is far below every safety margin (a run's lease is renewed 1.5 s
 * before it ends, and its signal aborted 300 ms before).
 */
function staggeredClock(index: number, count: number): Clock {
  const step = Math.min(40, Math.floor(120 / count));
  return {
    monotonic: () => systemClock.monotonic(),
    sleep: (ms, signal) => {
      const second = Math.floor((Date.now() + ms + 500) / 1000);
      return systemClock.sleep(ms + ((second + index) % count) * step, signal);
    },
  };
}

function parseNodeArgs(): NodeArgs {
  const { values } = parseArgs({
    options: {
      node: { type: 'string' },
      db: { type: 'string' },
      ledger: { type: 'string' },
      index: { type: 'string', default: '0' },
      count: { type: 'string', default: '1' },
    },
  });
  const index = Number(values.index);
  const count = Number(values.count);
  if (!values.node || !values.db || !values.ledger || !(index >= 0 && index < count))
    throw new Error(
      'usage: node-process.js --node NAME --db PATH --ledger PATH --index I --count N (started by `oncely demo`)',
    );
  return { node: values.node, db: values.db, ledger: values.ledger, index, count };
}

async function main(): Promise<void> {
  if (!process.send) throw new Error('node-process.js is started by `oncely demo` (it needs an IPC channel)');
  const args = parseNodeArgs();
  const { node } = args;
  const ledger = new LedgerWriter(args.ledger);
  const store = await openStore(`sqlite:${args.db}`);
  const scheduler = createScheduler({
    store,
    node,
    pollInterval: POLL_INTERVAL_MS,
    stopTimeout: STOP_TIMEOUT_MS,
    clock: staggeredClock(args.index, args.count),
  });
  const active = new Map<string, ActiveRun>();

  for (const job of DEMO_JOBS) {
    scheduler.define(job.name, jobOptions(job), async (ctx) => {
      const fireTime = ctx.fireTime.getTime();
      const key = runKey(ctx.job, fireTime, ctx.shard?.index, ctx.token);
      const run: ActiveRun = {
        job: ctx.job,
        phase: 'working',
        startedAt: performance.now(),
        finishingSince: 0,
        workMs: job.workMs,
      };
      active.set(key, run);
      const startedAt = Date.now();
      try {
        // The "work". Aborted when the claim's lease could not be kept or stop() gave up: then
        // this run writes nothing and the occurrence is left for recovery.
        await sleep(job.workMs, undefined, { signal: ctx.signal });
      } catch (err) {
        active.delete(key);
        throw err;
      }
      run.phase = 'finishing';
      run.finishingSince = performance.now();
      ledger.append({
        job: ctx.job,
        fireTime,
        shard: ctx.shard?.index ?? null,
        node,
        attempt: ctx.attempt,
        token: ctx.token,
        source: runSourceOf(ctx.job, fireTime, ctx.shard?.index, ctx.token),
        startedAt,
        finishedAt: Date.now(),
      });
    });
  }

  // The handler's context has no `source`; the 'started' event (emitted just before the handler is
  // called) has it.
  const sources = new Map<string, RunInfo['source']>();
  function runSourceOf(job: string, fireTime: number, shard: number | undefined, token: number) {
    const key = runKey(job, fireTime, shard, token);
    const source = sources.get(key) ?? 'schedule';
    sources.delete(key);
    return source;
  }

  scheduler.on('started', (e) => {
    sources.set(runKey(e.job, e.fireTime.getTime(), e.shard, e.token), e.source);
    send({ type: 'started', node, run: runInfo(e) });
  });
  scheduler.on('succeeded', (e) => {
    active.delete(runKey(e.job, e.fireTime.getTime(), e.shard, e.token));
    send({ type: 'succeeded', node, run: runInfo(e) });
  });
  scheduler.on('failed', (e) => {
    active.delete(runKey(e.job, e.fireTime.getTime(), e.shard, e.token));
    send({ type: 'failed', node, run: runInfo(e), error: text(e.error) });
  });
  scheduler.on('skipped', (e) =>
    send({ type: 'skipped', node, job: e.job, fireTime: e.fireTime.getTime(), shard: e.shard ?? null }),
  );
  scheduler.on('misfired', (e) =>
    send({
      type: 'misfired',
      node,
      job: e.job,
      fireTime: e.fireTime.getTime(),
      firstFireTime: e.firstFireTime.getTime(),
      count: e.count ?? null,
      action: e.action,
    }),
  );
  scheduler.on('error', (e) => {
    process.stderr.write(`${new Date().toISOString()} ${node}: ${e.during} failed: ${text(e.error)}\n`);
    send({ type: 'error', node, during: e.during, error: text(e.error) });
  });

  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    void (async () => {
      try {
        await scheduler.stop();
        await store.close();
        ledger.close();
      } catch (err) {
        process.stderr.write(`${node}: stopping failed: ${text(err)}\n`);
        process.exit(1);
      }
      process.exit(0);
    })();
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', () => {});
  // Never outlive the demo: a parent that died (even by SIGKILL) closes the IPC channel.
  process.on('disconnect', shutdown);
  process.on('message', (message: ParentMessage) => {
    if (message?.type === 'crash') crashWhenSafe(message.job);
  });

  /**
   * SIGKILLs this process while a run of `job` is mid-way, at a moment no run of this node is
   * between writing its ledger line and recording its success. (A node killed in that instant
   * would have done the work without the store knowing; recovery would rightly run it again — an
   * at-least-once window every scheduler has, which the demo's kill must not fall into by
   * chance.) The check runs in a timer callback, so no claim of the scheduler is half-done: on
   * SQLite every store call completes synchronously within the scheduler's promise chains.
   */
  function crashWhenSafe(job: string): void {
    const deadline = performance.now() + 1_500;
    const timer = setInterval(() => {
      const now = performance.now();
      const runs = [...active.values()];
      const finishing = runs.some((r) => r.phase === 'finishing' && now - r.finishingSince < 1_000);
      const working = runs.filter((r) => r.job === job && r.phase === 'working');
      const midway = working.some((r) => now - r.startedAt >= 200 && r.startedAt + r.workMs - now >= 1_000);
      if (midway && !finishing) {
        process.kill(process.pid, 'SIGKILL');
        return;
      }
      if (working.length === 0 || now > deadline) {
        clearInterval(timer);
        send({ type: 'crash-declined', node });
      }
    }, 10);
  }

  await scheduler.start();
  send({ type: 'ready', node, pid: process.pid });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
