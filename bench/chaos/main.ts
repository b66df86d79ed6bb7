/**
 * `npm run chaos -- --minutes N [--backends postgres,redis] [--nodes 5] [--seed S]`
 *
 * Runs bench/chaos/run.ts on each backend in turn, prints what happened (occurrences, recoveries,
 * duplicates by kind, misses, stale writes refused, violations) and exits 1 when a guarantee was
 * violated (2 on bad arguments). The seed makes the fault schedule repeatable.
 */
import { parseArgs } from 'node:util';
import { formatViolations } from '../../src/testing/index.js';
import { type ChaosBackend, type ChaosReport, runChaos } from './run.js';

function usage(message: string): never {
  process.stderr.write(
    `chaos: ${message}\nusage: npm run chaos -- --minutes N [--backends postgres,redis] [--nodes 5] [--seed S]\n`,
  );
  process.exit(2);
}

let values: { minutes?: string; backends?: string; nodes?: string; seed?: string; quiet?: boolean };
try {
  ({ values } = parseArgs({
    options: {
      minutes: { type: 'string' },
      backends: { type: 'string' },
      nodes: { type: 'string' },
      seed: { type: 'string' },
      quiet: { type: 'boolean' },
    },
  }));
} catch (err) {
  usage((err as Error).message);
}
const minutes = Number(values.minutes ?? '1');
if (!(minutes > 0) || minutes > 24 * 60)
  usage(`--minutes must be a number of minutes above 0; got ${values.minutes}`);
const nodes = Number(values.nodes ?? '5');
if (!Number.isInteger(nodes) || nodes < 2 || nodes > 20)
  usage(`--nodes must be a whole number from 2 to 20; got ${values.nodes}`);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!Number.isInteger(seed)) usage(`--seed must be a whole number; got ${values.seed}`);
const backends = (values.backends ?? 'postgres,redis').split(',').map((b) => b.trim());
for (const b of backends)
  if (b !== 'postgres' && b !== 'redis') usage(`unknown backend ${b} (postgres, redis)`);

const reports: ChaosReport[] = [];
for (const backend of backends as ChaosBackend[]) {
  console.log(`\n== ${backend}: ${nodes} nodes, ${minutes} min, seed ${seed}`);
  const report = await runChaos({
    backend,
    durationMs: Math.round(minutes * 60_000),
    nodes,
    seed,
    ...(values.quiet ? {} : { log: (line: string) => console.log(`  ${line}`) }),
  });
  reports.push(report);
}

const rows: [string, (r: ChaosReport) => number | string][] = [
  ['occurrences started', (r) => r.result.occurrences],
  ['recoveries (legal)', (r) => r.result.recoveries],
  ['retries (legal)', (r) => r.result.retries],
  ['duplicates: concurrent', (r) => r.result.duplicates.concurrent],
  ['duplicates: after success', (r) => r.result.duplicates['sequential-after-success']],
  ['duplicates: after another end', (r) => r.result.duplicates['sequential-after-finish']],
  ['duplicates: recovery w/o expiry', (r) => r.result.duplicates['recovery-without-expiry']],
  ['misses (lost fire times)', (r) => r.result.misses],
  ['skipped on record, borne out', (r) => r.result.skipped],
  ['skipped on record, unjustified', (r) => r.result.unjustifiedSkips],
  ['effect writes accepted', (r) => r.result.writesAccepted],
  ['stale writes refused', (r) => r.result.staleWritesRefused],
  ['violations', (r) => r.result.violations.length],
];
console.log(`\n${'seed'.padEnd(32)}${reports.map((r) => String(r.seed).padEnd(12)).join('')}`);
console.log(`${''.padEnd(32)}${reports.map((r) => r.backend.padEnd(12)).join('')}`);
for (const [label, cell] of rows)
  console.log(`${label.padEnd(32)}${reports.map((r) => String(cell(r)).padEnd(12)).join('')}`);

for (const r of reports)
  console.log(
    `faults on ${r.backend}: ${Object.entries(r.faults)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );

let failed = false;
for (const r of reports) {
  if (r.result.violations.length === 0) continue;
  failed = true;
  console.log(
    `\n!! ${r.backend} (seed ${r.seed}): ${r.result.violations.length} violated guarantees\n${formatViolations(r.result)}`,
  );
  console.log(`timeline:\n${r.timeline.map((l) => `  ${l}`).join('\n')}`);
}
process.exit(failed ? 1 : 0);
