/**
 * `npm run bench:upsert [-- --count 100000] [-- --rounds 3] [-- --quick] [-- --only oncely|floor]`
 *
 * Bulk upsert of stored schedules on PostgreSQL: `openStore(url)` +
 * `createScheduler({ store }).schedules.upsert(list)` with `count` per-user daily crons in five
 * time zones (bench/scale/workload.ts), against its floor — the same rows (`sch|`, `schj|`, `due|`
 * per schedule, same keys and values) written into a table of the same shape with plain multi-row
 * `INSERT … ON CONFLICT ("key") DO UPDATE` through pg, 5,000 rows per statement, as many in flight
 * as oncely keeps batches in flight. Each is measured twice per round: into empty tables (new ids)
 * and again with the same ids (every row replaced). Rounds alternate oncely and the floor on fresh
 * tables; rates are medians over rounds, the ratio is oncely's time ÷ the floor's time in the same
 * round (median). The server is a throwaway one unless ONCELY_BENCH_POSTGRES_URL points elsewhere.
 * Prints the table and replaces the "Bulk upsert" section of BENCHMARKS.md (not with `--quick`
 * or `--only`).
 *
 * Profile: `node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/upsert.ts --only oncely --rounds 1 --quick`.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openStore } from '../src/index.js';
import { createScheduler } from '../src/scheduler/index.js';
import { keys } from '../src/scheduler/keys.js';
import type { StoredSchedule } from '../src/scheduler/types.js';
import { dropPrefixed } from './cleanup.js';
import { nodeCpuUs, serverCpuReader } from './cpu.js';
import { machineLine, publish, runMain } from './report.js';
import { ROOT } from './run-backend.js';
import { otherSchedule } from './scale/workload.js';
import { provision } from './servers.js';
import { formatRate, formatRatio } from './stats.js';

const HEADING = '## Bulk upsert (`npm run bench:upsert`)';
const JOB = 'report';
/** Rows per floor statement (3 parameters each: 15,000 of PostgreSQL's 65,535). */
const FLOOR_ROWS = 5_000;
/** Floor statements in flight (oncely keeps 4 batches in flight). */
const FLOOR_IN_FLIGHT = 4;

const { values: args } = parseArgs({
  options: {
    count: { type: 'string' },
    rounds: { type: 'string' },
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (args.help) {
  console.log('usage: npm run bench:upsert -- [--count N] [--rounds N] [--quick] [--only oncely|floor]');
  process.exit(0);
}
const count = Number(args.count ?? (args.quick ? 20_000 : 100_000));
const rounds = Number(args.rounds ?? (args.quick ? 1 : 3));
if (!Number.isInteger(count) || count < 1 || !Number.isInteger(rounds) || rounds < 1) {
  console.error('--count and --rounds take positive integers');
  process.exit(2);
}
if (args.only !== undefined && args.only !== 'oncely' && args.only !== 'floor') {
  console.error('--only takes oncely or floor');
  process.exit(2);
}
const runOncely = args.only !== 'floor';
const runFloor = args.only !== 'oncely';

interface Timing {
  /** Seconds for the first upsert (new ids) and the second (same ids, every row replaced). */
  insert: number;
  replace: number;
  /** CPU µs of this process and of the server, both upserts together (server NaN when not ours). */
  nodeUs: number;
  serverUs: number;
}

/** Times `write` twice (new ids, then replace), with this process's and the server's CPU time. */
async function twice(url: string, write: () => Promise<void>): Promise<Timing> {
  const serverCpu = serverCpuReader(url);
  const [node0, server0] = [nodeCpuUs(), serverCpu?.() ?? Number.NaN];
  const timed = async () => {
    const t0 = performance.now();
    await write();
    return (performance.now() - t0) / 1000;
  };
  const insert = await timed();
  const replace = await timed();
  // Read before the pool closes: a connection's server process takes its CPU time with it.
  return { insert, replace, nodeUs: nodeCpuUs() - node0, serverUs: (serverCpu?.() ?? Number.NaN) - server0 };
}

/** The schedules to upsert, and when each fires next (built before any timing). */
function schedules(writtenAt: number): { list: StoredSchedule[]; nextAt: number[] } {
  const nextAt: number[] = [];
  const list = Array.from({ length: count }, (_, i): StoredSchedule => {
    const s = otherSchedule(i, writtenAt);
    nextAt.push(s.nextAt);
    return { id: s.id, job: JOB, cron: s.cron, timezone: s.tz, data: { user: i } };
  });
  return { list, nextAt };
}

const prefix = () => `bench_${randomBytes(4).toString('hex')}_`;

async function measureOncely(url: string): Promise<Timing> {
  const p = prefix();
  const store = await openStore(url, { prefix: p });
  try {
    const scheduler = createScheduler({ store, node: 'bench-upsert' });
    const { list } = schedules(Date.now());
    const timing = await twice(url, () => scheduler.schedules.upsert(list));
    const stored = await store.count(keys.schedulePrefix);
    if (stored !== count) throw new Error(`oncely stored ${stored} schedules, expected ${count}`);
    return timing;
  } finally {
    await store.close();
    await dropPrefixed('postgres', url, p);
  }
}

/** The rows oncely writes for `list`, with values of the same shape and size. */
function floorRows(list: readonly StoredSchedule[], nextAt: readonly number[]): string[] {
  const rows: string[] = [];
  list.forEach((s, i) => {
    const v = randomBytes(8).toString('hex');
    rows.push(keys.schedule(s.id), `${JSON.stringify(s).slice(0, -1)},"v":"${v}"}`);
    rows.push(keys.scheduleOfJob(s.job, s.id), '');
    rows.push(keys.dueEntry(nextAt[i]!, s.id, v), JSON.stringify({ job: s.job }));
  });
  return rows;
}

async function measureFloor(url: string): Promise<Timing> {
  const table = `${prefix()}records`;
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  try {
    // The shape of oncely's records table (src/store/sql/postgres/schema.ts).
    await pool.query(
      `CREATE TABLE ${table} ("key" text COLLATE "C" PRIMARY KEY, value text NOT NULL, expires_at bigint)`,
    );
    await pool.query(`CREATE INDEX ${table}_expires_at ON ${table} (expires_at)`);
    const { list, nextAt } = schedules(Date.now());
    const timing = await twice(url, async () => {
      // Rows are built inside the timing, as oncely builds its own.
      const rows = floorRows(list, nextAt);
      const statements: { text: string; values: string[] }[] = [];
      for (let at = 0; at < rows.length; at += FLOOR_ROWS * 2) {
        const values = rows.slice(at, at + FLOOR_ROWS * 2);
        const tuples: string[] = [];
        for (let i = 0; i < values.length; i += 2) tuples.push(`($${i + 1}, $${i + 2}, NULL)`);
        statements.push({
          text:
            `INSERT INTO ${table} ("key", value, expires_at) VALUES ${tuples.join(', ')} ` +
            'ON CONFLICT ("key") DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at',
          values,
        });
      }
      let next = 0;
      await Promise.all(
        Array.from({ length: FLOOR_IN_FLIGHT }, async () => {
          while (next < statements.length) await pool.query(statements[next++]!);
        }),
      );
    });
    // The replaced schedules' due rows stay (new `v`, new key), as oncely's blind writes leave them.
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM ${table} WHERE left("key", 4) = 'sch|'`,
    );
    if (rows[0].n !== count) throw new Error(`floor stored ${rows[0].n} schedules, expected ${count}`);
    return timing;
  } finally {
    await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
    await pool.end();
  }
}

/** CPU µs per schedule upserted (two upserts per measurement). */
const cpu = (us: number) => (Number.isFinite(us) ? (us / (2 * count)).toFixed(1) : '—');

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

async function main(): Promise<void> {
  const started = new Date();
  const loadAtStart = os.loadavg()[0] ?? Number.NaN;
  console.log(`bench:upsert — postgres, ${count.toLocaleString('en-US')} schedules, ${rounds} rounds`);
  const server = await provision('postgres');
  const oncely: Timing[] = [];
  const floor: Timing[] = [];
  let version = '';
  try {
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    version = String((await client.query('SHOW server_version')).rows[0].server_version);
    await client.end();
    for (let r = 0; r < rounds; r++) {
      // Alternate which goes first, so drift hits both alike.
      const order = r % 2 === 0 ? ['oncely', 'floor'] : ['floor', 'oncely'];
      for (const which of order) {
        if (which === 'oncely' && runOncely) oncely.push(await measureOncely(server.url));
        if (which === 'floor' && runFloor) floor.push(await measureFloor(server.url));
      }
      const last = (t: Timing[], name: string) => {
        const x = t[r];
        return x
          ? `${name} ${formatRate(count / x.insert)}/s new, ${formatRate(count / x.replace)}/s replace, ` +
              `CPU µs/schedule ${cpu(x.nodeUs)} node + ${cpu(x.serverUs)} server`
          : '';
      };
      console.log(
        `round ${r + 1}: ${[last(oncely, 'oncely'), last(floor, 'floor')].filter(Boolean).join('; ')}`,
      );
    }
  } finally {
    await server.stop();
  }
  if (!runOncely || !runFloor) return;
  type Phase = 'insert' | 'replace';
  const rate = (t: Timing[], k: Phase) => median(t.map((x) => count / x[k]));
  const ratio = (k: Phase) => median(oncely.map((o, i) => o[k] / floor[i]![k]));
  const row = (label: string, k: Phase) =>
    `| ${label} | ${formatRate(rate(oncely, k))} | ${formatRate(rate(floor, k))} | ${formatRatio(ratio(k))} |`;
  const cpuOf = (t: Timing[]) =>
    `${cpu(median(t.map((x) => x.nodeUs)))} + ${cpu(median(t.map((x) => x.serverUs)))}`;
  const body = [
    `Run ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC${args.quick ? ' (--quick smoke run)' : ''}: ` +
      `${count.toLocaleString('en-US')} schedules, ${rounds} rounds, PostgreSQL ${version} (${server.origin}).`,
    '',
    `Machine: ${machineLine(loadAtStart)}.`,
    '',
    'Method: one `scheduler.schedules.upsert(list)` call with every schedule (per-user daily crons `M H * * *` in ' +
      'five time zones, `data: { user }`, through `openStore(url)` defaults), timed from the call to its promise; then ' +
      'the same call again (every schedule replaced). The floor writes the three rows per schedule that oncely writes ' +
      'besides its audit entries (same keys ' +
      `and values) into a table of the same shape with plain multi-row \`INSERT … ON CONFLICT DO UPDATE\`, ` +
      `${FLOOR_ROWS.toLocaleString('en-US')} rows per statement, ${FLOOR_IN_FLIGHT} in flight, building its rows inside ` +
      "the timing. Fresh tables every round; rates are medians over rounds; ratio = oncely's time ÷ the floor's in " +
      'the same round, median (1.00 = as fast). CPU per schedule: this Node process (`process.cpuUsage`) + the ' +
      "server's processes (their threads' run time from /proc, read before the pool closes), over both upserts, median.",
    '',
    '| upsert | oncely schedules/s | floor schedules/s | ratio |',
    '|---|--:|--:|--:|',
    row('new ids', 'insert'),
    row('same ids again (replace)', 'replace'),
    '',
    `CPU µs per schedule (node + server): oncely ${cpuOf(oncely)}, floor ${cpuOf(floor)}.`,
  ].join('\n');
  publish(ROOT, HEADING, body, args.quick);
}

runMain(main);
