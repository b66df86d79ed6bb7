/**
 * Sweeps the simulator over many seeds of one job mix and fault mix, and counts the seeds whose
 * run broke a guarantee — the tool behind every "busy `jall,sh,shs` 1 of 100" in the issue notes
 * and docs/simulator.md. For people changing oncely; not part of `npm test`.
 *
 *   npm run sweep -- --jobs jit,sh,shs --faults busy --seeds 1-100
 *   npm run sweep -- --jobs churn --faults sim --nodes 4 --seeds 1-50
 *   npm run sweep -- --jobs skip,pq,pages --faults busy --trace 37 --grep 'skip@'
 *
 * `--faults`: `busy` (test/fixtures/sim-faults.ts BUSY_RUN: 3 nodes, 200 ms polls, long stalls),
 * `sim` (SIM_RUN: 3 nodes, SIM_FAULTS: partitions, skew, crashes), `mix5` (MIX5_RUN: 4 nodes,
 * 300 ms polls, 12 slots, one partition, two crashes; its jobs are m5pages,tick,m5lim,m5q).
 * `--nodes` overrides the node count. `--jobs`: names from test/fixtures/sim-jobs.ts,
 * comma-separated, in that order (a seed replays only with the same jobs in the same order).
 * `--trace SEED`: one seed, its violations and the trace lines matching `--grep` (a regular
 * expression; default: every line).
 *
 * A seed that fails prints one line (its violations' kinds and first details); the last line is
 * `FAILED k/N: seeds`. Exit code 1 when a seed failed.
 */
import { parseArgs } from 'node:util';
import { formatReport, type SimJob, type SimulateOptions, simulate } from '../src/testing/index.js';
import { BUSY_RUN, MIX5_RUN, SIM_RUN } from '../test/fixtures/sim-faults.js';
import * as fixtures from '../test/fixtures/sim-jobs.js';

const JOBS: Record<string, SimJob> = {};
for (const job of Object.values(fixtures).flat()) JOBS[job.name] = job;

const FAULTS: Record<string, Omit<SimulateOptions, 'seed' | 'jobs'>> = {
  busy: BUSY_RUN,
  sim: SIM_RUN,
  mix5: MIX5_RUN,
};

function seedsOf(text: string): number[] {
  const m = /^(\d+)(?:-(\d+))?$/.exec(text);
  if (!m) throw new Error(`--seeds takes N or A-B; got ${text}`);
  const from = Number(m[1]);
  const to = Number(m[2] ?? m[1]);
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string', default: 'jit,sh,shs,pq' },
      faults: { type: 'string', default: 'busy' },
      nodes: { type: 'string' },
      seeds: { type: 'string', default: '1-50' },
      trace: { type: 'string' },
      grep: { type: 'string' },
    },
  });
  const base = FAULTS[values.faults];
  if (!base) throw new Error(`--faults takes ${Object.keys(FAULTS).join(', ')}; got ${values.faults}`);
  const jobs = values.jobs.split(',').map((name) => {
    const job = JOBS[name];
    if (!job) throw new Error(`unknown job mix ${name}; known: ${Object.keys(JOBS).sort().join(', ')}`);
    return job;
  });
  const options = (seed: number): SimulateOptions => ({
    ...base,
    ...(values.nodes !== undefined && { nodes: Number(values.nodes) }),
    seed,
    jobs,
  });
  if (values.trace !== undefined) {
    const o = options(Number(values.trace));
    const result = await simulate(o);
    const grep = values.grep === undefined ? undefined : new RegExp(values.grep);
    for (const line of result.trace) if (!grep || grep.test(line)) console.log(line);
    console.log(
      result.violations.length === 0 ? 'no violations' : formatReport(o, result).split('\n--- trace')[0],
    );
    return;
  }
  const failed: number[] = [];
  const seeds = seedsOf(values.seeds);
  const t0 = Date.now();
  for (const seed of seeds) {
    const result = await simulate(options(seed));
    if (result.violations.length === 0) continue;
    failed.push(seed);
    const kinds = [...new Set(result.violations.map((v) => v.kind))].join(',');
    const first = result.violations
      .slice(0, 3)
      .map((v) => `${v.occ}: ${v.message.slice(0, 60)}`)
      .join(' | ');
    console.log(`seed ${seed}: ${kinds}: ${first}`);
  }
  const s = ((Date.now() - t0) / 1000).toFixed(0);
  console.log(
    `FAILED ${failed.length}/${seeds.length}: ${failed.join(' ')} (${values.jobs}, ${values.faults}, ${s} s)`,
  );
  if (failed.length > 0) process.exitCode = 1;
}

await main();
