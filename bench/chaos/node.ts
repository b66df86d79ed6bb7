/**
 * One chaos node (a process of its own, started by bench/chaos/run.ts):
 *
 *   node --import tsx bench/chaos/node.ts URL PREFIX NODE
 *
 * Defines `tick` (every 1 s), `sharded` (every 2 s, 3 shards) and `stored` (no trigger: the
 * driver's stored schedules, every 2 s each, claimed in pages), all with a 3 s lease, misfire
 * run-once and recover; each handler works ~300 ms, then writes its token to the fenced
 * sink (resource = the occurrence) — also after its lease was lost, which is what the fence is
 * for. Prints the history checker's lines (test/fixtures/run-lines.ts), { event: 'write', … }
 * per sink decision, and { event: 'ready' }. Runs until killed or SIGTERM (then stops cleanly).
 */
import { openStore } from '../../src/index.js';
import { createScheduler } from '../../src/scheduler/index.js';
import { occurrenceKey } from '../../src/testing/index.js';
import { printRuns } from '../../test/fixtures/run-lines.js';
import { CHAOS_JOBS } from './jobs.js';
import { openSink } from './sink.js';

const [url, prefix, node] = process.argv.slice(2) as [string, string, string];
const print = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);

const store = await openStore(url, { prefix, connectTimeoutMs: 2000 });
const sink = await openSink(url);
const scheduler = createScheduler({ store, node, pollInterval: '200ms', stopTimeout: '2s' });
scheduler.on('error', () => {});
const handler = async (ctx: {
  job: string;
  scheduleId?: string | undefined;
  fireTime: Date;
  shard?: { index: number };
  token: number;
}) => {
  await new Promise((resolve) => setTimeout(resolve, 300));
  const resource = occurrenceKey({
    job: ctx.job,
    scheduleId: ctx.scheduleId,
    fireTime: ctx.fireTime.getTime(),
    shard: ctx.shard?.index,
  });
  try {
    const accepted = await sink.write(resource, ctx.token);
    print({ event: 'write', resource, token: ctx.token, accepted });
  } catch {
    // The store is unreachable: the effect is not written (a recovery will write it).
  }
};
const common = { lockAtMostFor: '3s', misfire: 'run-once', recover: true } as const;
scheduler.define('tick', { ...common, every: CHAOS_JOBS.tick.every }, handler);
scheduler.define(
  'sharded',
  { ...common, every: CHAOS_JOBS.sharded.every, shards: CHAOS_JOBS.sharded.shards, overlap: 'allow' },
  handler,
);
scheduler.define('stored', common, handler);
printRuns(scheduler);
await scheduler.start();
print({ event: 'ready' });
process.once('SIGTERM', async () => {
  await scheduler.stop();
  await sink.close().catch(() => {});
  await store.close().catch(() => {});
  process.exit(0);
});
