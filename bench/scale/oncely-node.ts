/**
 * oncely in the scale bench, run as a child process (see child.ts).
 *
 * - node: `createScheduler` on `openStore(url)`, wrapped so that every call through the Store
 *   interface is counted (and the records that `scan`/`get` return), with one job and no
 *   trigger of its own: it runs only from stored schedules, and its handler only records its start.
 * - seed: `scheduler.schedules.upsert([…])` in batches when upsert takes an array; otherwise
 *   (today's oncely) awaited single upserts, 64 in flight.
 */
// The built package (dist/, as users run it and as the peers run theirs), not the TypeScript
// sources through tsx: its transform wraps every closure in a naming helper that costs the hot
// path a few per cent. main.ts builds dist/ before it starts.
import { OncelyError, openStore } from '../../dist/index.js';
import { createScheduler } from '../../dist/scheduler/index.js';
import type { StoredSchedule } from '../../src/scheduler/types.js';
import type { Store } from '../../src/store/types.js';
import { inFlight, serveChild } from './child.js';
import type { ChildConfig } from './protocol.js';
import type { UserSchedule } from './workload.js';

const JOB = 'scale-user';
const IN_FLIGHT = 64;

function stored(s: UserSchedule, variant: ChildConfig['variant']): StoredSchedule {
  return {
    id: s.id,
    job: JOB,
    cron: s.cron,
    timezone: s.tz,
    data: { user: s.id },
    ...(variant === 'jitter' && { jitter: '5m' }),
  };
}

/**
 * SCALE_CALLS=1: each node process prints (stderr; shown with --verbose) its Store calls of the
 * last 20 s by kind — the method, and the key prefixes its keys or ops touch, with the batch's size
 * (S up to 10, M up to 100, L more), and the records its scans and gets returned (`rows of …`) —
 * to see which calls a change adds or saves, and how many rows a node reads for what it runs.
 */
const callKinds = process.env['SCALE_CALLS'] ? new Map<string, number>() : undefined;
if (callKinds)
  setInterval(() => {
    process.stderr.write(
      `store calls by kind, last 20 s: ${JSON.stringify([...callKinds].sort((a, b) => b[1] - a[1]))}\n`,
    );
    callKinds.clear();
  }, 20_000).unref();

/** The kind of a Store call for SCALE_CALLS: `apply put:hist,put:ctl#M`, `scan due`, `getMany sch#L`. */
function callKind(method: string, first: unknown): string {
  const prefix = (key: unknown) => String(key ?? '').split('|')[0];
  if (!Array.isArray(first)) return `${method} ${typeof first === 'string' ? prefix(first) : ''}`;
  const parts = new Set(
    first.map((o: unknown) =>
      typeof o === 'string'
        ? prefix(o)
        : `${(o as { op?: string }).op}:${prefix((o as { key?: string }).key)}`,
    ),
  );
  const size = first.length > 100 ? 'L' : first.length > 10 ? 'M' : 'S';
  return `${method} ${[...parts].sort().join(',')}#${size}`;
}

/** `store` with every Store call counted, and the records `scan` and `get` return. */
function counted(store: Store, counts: { calls: number; rowsRead: number }): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'close' || typeof prop === 'symbol') return value;
      return (...args: unknown[]) => {
        counts.calls++;
        const kind = callKinds && callKind(prop, args[0]);
        if (callKinds && kind) callKinds.set(kind, (callKinds.get(kind) ?? 0) + 1);
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (callKinds && prop === 'claimPage') {
          // The due entries a page claim asked for (its moves) and those it won: what the other
          // nodes had moved first is work read, planned, encoded and sent for nothing.
          const ops = args[1] as { op: string }[];
          return (result as Promise<{ results: boolean[] }>).then((r) => {
            let asked = 0;
            let won = 0;
            ops.forEach((o, i) => {
              if (o.op !== 'move') return;
              asked++;
              if (r.results[i]) won++;
            });
            callKinds.set('page moves asked', (callKinds.get('page moves asked') ?? 0) + asked);
            callKinds.set('page moves won', (callKinds.get('page moves won') ?? 0) + won);
            return r;
          });
        }
        if (prop === 'scan' || prop === 'get') {
          return (result as Promise<unknown>).then((r) => {
            const rows = Array.isArray(r) ? r.length : r !== null ? 1 : 0;
            counts.rowsRead += rows;
            if (callKinds && kind)
              callKinds.set(`rows of ${kind}`, (callKinds.get(`rows of ${kind}`) ?? 0) + rows);
            return r;
          });
        }
        return result;
      };
    },
  });
}

serveChild({
  async seeder(config) {
    const store = await openStore(config.url, { prefix: config.prefix });
    const scheduler = createScheduler({ store, node: 'scale-seeder' });
    // Typed for one schedule today; a bulk upsert takes an array.
    const upsert = scheduler.schedules.upsert as unknown as (
      s: StoredSchedule | readonly StoredSchedule[],
    ) => Promise<unknown>;
    let bulk: boolean | undefined;
    return {
      get mode() {
        if (bulk === undefined) return 'not yet known';
        return bulk
          ? '`schedules.upsert([…])`, 5,000 per call'
          : `\`schedules.upsert(one)\`, ${IN_FLIGHT} in flight (no bulk upsert)`;
      },
      async upsert(batch) {
        const specs = batch.map((b) => stored(b, config.variant));
        if (bulk === undefined) {
          // Probe with a one-element array: today's upsert rejects it as a schedule without an id.
          try {
            await upsert(specs.slice(0, 1));
            bulk = true;
          } catch (err) {
            if (!(err instanceof OncelyError && err.code === 'INVALID_ARGUMENT')) throw err;
            bulk = false;
          }
        }
        if (bulk) await upsert(specs);
        else await inFlight(specs, IN_FLIGHT, (s) => upsert(s));
      },
      close: () => store.close(),
    };
  },

  async node({ config, started }) {
    const store = await openStore(config.url, { prefix: config.prefix });
    const counts = { calls: 0, rowsRead: 0 };
    const scheduler = createScheduler({
      store: counted(store, counts),
      node: `node-${config.node}`,
      concurrency: config.concurrency,
    });
    const options =
      config.variant === 'rate'
        ? { rateLimit: { max: 100_000, per: '1s' } }
        : config.variant === 'queue'
          ? { overlap: 'queue' as const }
          : {};
    scheduler.define(JOB, options, (ctx) => {
      started(ctx.scheduleId ?? '?', ctx.fireTime.getTime());
    });
    // A failing store call shows up here, not as a missing start: the first ones are printed (the
    // orchestrator shows a child's last lines when its run fails, all of them with --verbose).
    let errors = 0;
    scheduler.on('error', ({ error, during }) => {
      if (++errors <= 5) process.stderr.write(`scheduler error during ${during}: ${String(error)}\n`);
      else if (errors === 6) process.stderr.write('scheduler errors: more follow, not printed\n');
    });
    await scheduler.start();
    return {
      info: `concurrency ${config.concurrency}, other options default (poll 1 s, misfire run-once after 1 s)${variantInfo(config.variant)}`,
      storeCounts: () => ({ ...counts }),
      async stop() {
        await scheduler.stop();
        await store.close();
      },
    };
  },
});

/** How a variant changes oncely's run (printed with its results). */
function variantInfo(variant: ChildConfig['variant']): string {
  if (variant === 'jitter') return `; each schedule jitter '5m'`;
  if (variant === 'rate') return '; rateLimit 100,000 per second';
  if (variant === 'queue') return "; overlap 'queue' (claimed occurrence by occurrence)";
  return '';
}
