/**
 * One scheduler node of `npm run bench:scheduler`'s multi-process case, as a child process (forked
 * by bench/scheduler.ts with `--import tsx`; it loads the built package, dist/): `openStore(url)`
 * with every call through the Store interface counted, `--jobs` jobs `every: --every` whose
 * handlers record their lateness.
 *
 * Protocol (IPC): the parent sends the config; the child answers `ready` once `start()` returned;
 * `go` starts the measured window (calls and starts before it are dropped); `stop` stops the
 * node and answers with what it saw in the window: lateness of each start (host time − fire
 * time, ms), the occurrence keys it ran, and the store calls it made.
 */
import { createScheduler, openStore } from '../dist/index.js';
import { counted } from './counted-store.js';

export interface NodeConfig {
  url: string;
  prefix: string;
  node: string;
  jobs: number;
  every: string;
  concurrency: number;
}

export interface NodeReport {
  lateness: number[];
  keys: string[];
  calls: number;
}

type FromParent = { config: NodeConfig } | { go: true } | { stop: true };

const send = (message: unknown) => process.send?.(message);

let config: NodeConfig | undefined;
process.on('message', (message: FromParent) => {
  if ('config' in message) {
    config = message.config;
    void run(config).catch((err: unknown) => {
      send({ error: String(err) });
      process.exit(1);
    });
  }
});

async function run(c: NodeConfig): Promise<void> {
  const counter = { calls: 0 };
  const lateness: number[] = [];
  const keys: string[] = [];
  const store = await openStore(c.url, { prefix: c.prefix });
  const scheduler = createScheduler({
    store: counted(store, counter),
    node: c.node,
    concurrency: c.concurrency,
  });
  for (let j = 0; j < c.jobs; j++) {
    scheduler.define(`job-${j}`, { every: c.every }, (ctx) => {
      lateness.push(performance.timeOrigin + performance.now() - ctx.fireTime.getTime());
      keys.push(`${ctx.job}@${ctx.fireTime.getTime()}`);
    });
  }
  await scheduler.start();
  process.on('message', (message: FromParent) => {
    if ('go' in message) {
      // The window starts: what a node did before (a fire time while the slowest node was still
      // starting) counts neither its calls nor its starts.
      counter.calls = 0;
      lateness.length = 0;
      keys.length = 0;
    } else if ('stop' in message) {
      const calls = counter.calls;
      void (async () => {
        await scheduler.stop();
        await store.close();
        send({ report: { lateness, keys, calls } satisfies NodeReport });
        process.exit(0);
      })();
    }
  });
  send({ ready: true });
}
