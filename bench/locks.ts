/**
 * `npm run bench:locks [-- --backends memory,sqlite,postgres,mysql,redis] [-- --quick] [-- --verbose]`
 *
 * Measures one lock cycle (`store.tryLock` + `lock.release()`) per backend against its floors —
 * the same lock written by hand, and the driver's bare round trip — on the same server, driver,
 * pool size and concurrency, in one run, and (on Redis) against `@sesamecare-oss/redlock`.
 * Servers are throwaway ones started from the installed binaries unless ONCELY_BENCH_POSTGRES_URL,
 * ONCELY_BENCH_MYSQL_URL or ONCELY_BENCH_REDIS_URL point elsewhere. Prints the tables and replaces
 * the "Locks" section of BENCHMARKS.md (not with `--quick`, a smoke run).
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { type BackendResult, machineLine, publish, renderBackend, runMain } from './report.js';
import { benchBackend, CONCURRENCY, type Plan, ROOT } from './run-backend.js';
import { ALL_BACKENDS, type BackendName, provision } from './servers.js';

const HEADING = '## Locks (`npm run bench:locks`)';

const { values: args } = parseArgs({
  options: {
    backends: { type: 'string', default: ALL_BACKENDS.join(',') },
    quick: { type: 'boolean', default: false },
    verbose: { type: 'boolean', short: 'v', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (args.help) {
  console.log(
    'usage: npm run bench:locks -- [--backends memory,sqlite,postgres,mysql,redis] [--quick] [--verbose]',
  );
  process.exit(0);
}
const selected = args.backends
  .split(',')
  .map((b) => b.trim())
  .filter((b) => b !== '');
for (const b of selected) {
  if (!(ALL_BACKENDS as readonly string[]).includes(b)) {
    console.error(`unknown backend ${JSON.stringify(b)}; choose from ${ALL_BACKENDS.join(', ')}`);
    process.exit(2);
  }
}
const backends = selected as BackendName[];

const plan: Plan = args.quick
  ? { rounds: 3, cellMs: 150, warmUpOps: 50, countOps: 50, verbose: args.verbose }
  : { rounds: 3, cellMs: 1_000, warmUpOps: 200, countOps: 200, verbose: args.verbose };

const METHOD = (rounds: number, cellMs: number, warm: number, count: number) =>
  `One op is one lock cycle on a lock name — oncely's \`store.tryLock({ name, lockAtMostFor: '30s' })\` + ` +
  `\`lock.release()\`, or the hand-written floor's acquire-if-expired upsert (\`SET NX PX\` on Redis) + owner-checked ` +
  `delete — or one bare driver round trip (\`SELECT 1\`, \`PING\`); all rows of a backend share its server, driver and pool size. ` +
  `After a warm-up (${warm} ops at c=1, ${warm * 4} at c=${CONCURRENCY}) every row runs ${rounds} rounds of ${cellMs} ms ` +
  `at concurrency 1 and ${cellMs} ms at concurrency ${CONCURRENCY} (${CONCURRENCY} async workers in this process, each on ` +
  `its own name, so the store is measured rather than contention), the row order reversed every other round so drift hits all rows alike. ` +
  `p50/p99 pool the c=1 latencies of all rounds, ops/s are medians over rounds, and ratio is the row's time per op ` +
  `(1 / ops/s) ÷ the hand-written lock's in the same round, median over rounds (1.00 = as fast, lower = faster). ` +
  `round trips/op are counted client-side over a separate ${count}-op pass (pg queries, mysql2 query/execute calls, ` +
  `ioredis commands with a pipeline once, SQLite statements executed), and CPU µs/op @32 is this process's CPU time and ` +
  `the throwaway server's thread run time (\`/proc/*/task/*/schedstat\`) per op in the c=${CONCURRENCY} cells. ` +
  `The machine is small and shared: absolute numbers move between runs; compare ratios within one run.`;

async function main(): Promise<void> {
  const started = new Date();
  const loadAtStart = os.loadavg()[0] ?? Number.NaN;
  if (loadAtStart > os.cpus().length / 2) {
    console.warn(
      `note: 1-min load average is ${loadAtStart.toFixed(2)} on ${os.cpus().length} cores; expect noisy numbers`,
    );
  }
  console.log(
    `bench:locks — ${backends.join(', ')}${args.quick ? ' (quick)' : ''}; ` +
      `${plan.rounds} rounds × ${plan.cellMs} ms per cell`,
  );
  // Servers start in parallel up front (each backend awaits its own); all are stopped at the end.
  const servers = new Map(backends.map((b) => [b, provision(b)] as const));
  for (const s of servers.values()) s.catch(() => {});
  const stopAll = async () => {
    await Promise.all(
      [...servers.values()].map((s) =>
        s.then(
          (srv) => srv.stop(),
          () => {},
        ),
      ),
    );
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: stopping servers`);
      void stopAll().finally(() => process.exit(130));
    });
  }
  const results: BackendResult[] = [];
  try {
    for (const b of backends) results.push(await benchBackend(b, servers.get(b)!, plan));
  } finally {
    await stopAll();
  }
  const seconds = ((Date.now() - started.getTime()) / 1000).toFixed(0);
  const servered = results
    .filter((r) => !r.unavailable && r.backend !== 'memory')
    .map((r) => `${r.backend}: ${r.server}`);
  const body = [
    `Run ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC${args.quick ? ' (--quick smoke run)' : ''}, ${seconds} s.`,
    '',
    `Machine: ${machineLine(loadAtStart)}.`,
    ...(servered.length > 0 ? ['', `Servers and drivers: ${servered.join('; ')}.`] : []),
    '',
    `Method: ${METHOD(plan.rounds, plan.cellMs, plan.warmUpOps, plan.countOps)}`,
    '',
    ...results.map(renderBackend),
  ].join('\n');
  publish(ROOT, HEADING, body, args.quick);
}

runMain(main);
