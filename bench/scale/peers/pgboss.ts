/**
 * pg-boss in the scale bench, run as a child process (see ../child.ts), in the run's database.
 *
 * pg-boss 12 declares Node >= 22.12; on an older Node main.ts runs this file on a Node 22 fetched
 * from the npm registry (../node-runtime.ts). pg-boss 12 brings its own `pg` (^8.23.1, newer than
 * the project's pin), which ../counters.ts counts through `pgFrom`.
 *
 * Per-user schedules, as pg-boss 11+ keeps them: one queue for every user (`createQueue` once, by
 * the seeder), and one schedule per user on it, `schedule(queue, cron, { user }, { tz, key: user })`
 * (a row of its schedule table keyed by (queue, key); the same key again replaces it).
 *
 * How pg-boss 12 turns a schedule into a job: every `cronMonitorIntervalSeconds` one instance (the
 * one whose claim on a timestamp row succeeds) reads every schedule, evaluates each cron in Node
 * (an occurrence in the last 60 s is due) and inserts one job per due schedule into its internal
 * `__pgboss__send-it` queue; on every instance a send-it worker takes 50 of those per
 * `cronWorkerIntervalSeconds` and `send()`s each into the users' queue, where the `work()`
 * handlers get them. Jobs carry the schedule's data only, not the occurrence (the send-it job's
 * slot is dropped on the way), so `started(user, null)`: the ledger takes them for the fire instant.
 *
 * Configured for speed:
 * - cronWorkerIntervalSeconds at its documented minimum of 1 s (default 5 s). The send-it worker's
 *   50 per interval is fixed inside pg-boss, so a node forwards at most ~50 occurrences a second;
 *   more nodes forward more.
 * - cronMonitorIntervalSeconds: see CRON_MONITOR_SECONDS (its minimum was not the fastest).
 * - `useListenNotify` and the queue's `notify`: a job sent to the users' queue wakes the workers at
 *   once instead of at their next poll (pg-boss's documented fast path).
 * - work(): see WORK_OPTIONS.
 */
import { PgBoss, type WorkOptions } from 'pg-boss';
import { inFlight, serveChild } from '../child.js';

const QUEUE = 'scale-users';
/**
 * `schedule()` calls in flight while seeding. Each is one INSERT … ON CONFLICT on pg-boss's pool
 * (10 connections), but first pg-boss checks the cron in its time zone with cron-parser (luxon
 * underneath), ~270 µs of the seeder's CPU a call: the seeder's one core is the limit, not the
 * database. 50,000 keyed schedules on one queue, 2-core machine, throwaway PostgreSQL 15: 1 in
 * flight 1,950/s, 4 3,680/s, 16 3,720/s, 64 3,630/s, 256 3,600/s (64 with a pool of 20: 3,590/s);
 * 200,000 at 16: 3,790/s, so 1,000,000 take ~4.5 min. 16: the rate stops growing by then.
 */
const IN_FLIGHT = 16;
/**
 * How often a cron pass runs: pg-boss's default of 30 s, measured faster here than its documented
 * minimum of 1 s once many schedules are stored. A pass reads every schedule and evaluates its
 * cron in Node (~80 µs each: 10,000 stored cost a node ~0.8 s of CPU per pass), and every pass in
 * the 60 s after the fire instant files each due schedule into send-it again (the copies are
 * dropped by its singleton slot, after the insert was tried). 40,000 stored, 20,000 due, 4 nodes:
 * 1 s → 15,016 of 20,000 started by 600 s, the nodes' passes filling both cores (~280 s of CPU per
 * node); 10 s → all by 122.9 s; 30 s → all by 114.2 s (again: 114.3 s). At --quick sizes (10,000
 * stored, 2,000 due) 1 s was the faster: all by 47–49 s on 1 node and 26.3 s on 2, against 68.0 s
 * and 47.6 s with 30 s; a full run stores 1,000,000. `SCALE_PGBOSS_CRON_MONITOR_SECONDS` overrides it.
 */
const CRON_MONITOR_SECONDS = Number(process.env['SCALE_PGBOSS_CRON_MONITOR_SECONDS'] ?? 30);
/**
 * Each schedule's `missed` policy: pg-boss's default `skip` unless `SCALE_PGBOSS_MISSED=once`.
 * A pass files only the occurrences in the 60 s before the instant it read (after loading every
 * schedule). With 1,000,000 stored one pass held a node's event loop for ~5.3 min (full run of
 * 2026-11-29 14:39, 2 nodes: `version.cron_on` moved at 15:28:29, 15:29:00, 15:33:46, 15:34:18,
 * 15:38:56, 15:39:27, the nodes taking turns), so most instants fall between two passes' windows:
 * `skip` sends nothing for such an instant, `once` sends it (one job per schedule) at the next pass.
 */
const MISSED = missedPolicy(process.env['SCALE_PGBOSS_MISSED']);

function missedPolicy(value: string | undefined): 'skip' | 'once' {
  if (value === undefined || value === '' || value === 'skip') return 'skip';
  if (value === 'once') return 'once';
  throw new Error(`SCALE_PGBOSS_MISSED=${value}: use skip (pg-boss's default) or once`);
}
/**
 * work() options for many short jobs, from pg-boss's own descriptions of them: `batchSize` 100 (a
 * fetch claims up to that many at once; default 1), `burstWhenBatchFull` (fetch again at once while
 * fetches come back full, instead of waiting a polling interval), `pollingIntervalSeconds` 0.5 (its
 * documented minimum; default 2; with NOTIFY active the backstop poll is
 * notifyPollingIntervalSeconds, default 30, and a send wakes the worker anyway). One worker
 * (`localConcurrency` 1, the default): the handler only records its start, and one worker taking
 * batches of 100 outruns what reaches the queue (~50 jobs a second per node, see above).
 */
const WORK_OPTIONS = {
  batchSize: 100,
  burstWhenBatchFull: true,
  pollingIntervalSeconds: 0.5,
  localConcurrency: 1,
} satisfies WorkOptions;

serveChild({
  pgFrom: ['pg-boss'],

  async seeder(config) {
    // The seeder only writes: no cron passes, no maintenance.
    const boss = new PgBoss({ connectionString: config.url, schedule: false, supervise: false });
    boss.on('error', (err) => process.stderr.write(`pg-boss seeder: ${String(err)}\n`));
    await boss.start();
    await boss.createQueue(QUEUE, { notify: true });
    return {
      mode:
        `one queue (\`createQueue\` once, \`notify: true\`); \`schedule(queue, cron, { user }, { tz, key: user, missed: '${MISSED}' })\`, ` +
        `${IN_FLIGHT} in flight`,
      upsert: (batch) =>
        inFlight(batch, IN_FLIGHT, (s) =>
          boss.schedule(QUEUE, s.cron, { user: s.id }, { tz: s.tz, key: s.id, missed: MISSED }),
        ),
      close: () => boss.stop({ graceful: false }),
    };
  },

  async node({ config, started }) {
    const boss = new PgBoss({
      connectionString: config.url,
      cronMonitorIntervalSeconds: CRON_MONITOR_SECONDS,
      cronWorkerIntervalSeconds: 1,
      useListenNotify: true,
    });
    boss.on('error', (err) => process.stderr.write(`pg-boss node: ${String(err)}\n`));
    await boss.start();
    await boss.work<{ user: string }>(QUEUE, WORK_OPTIONS, async (jobs) => {
      for (const job of jobs) started(job.data.user, null);
    });
    return {
      info: `useListenNotify; work(queue, { ${Object.entries(WORK_OPTIONS)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ')} }); cronMonitorIntervalSeconds ${CRON_MONITOR_SECONDS}, cronWorkerIntervalSeconds 1`,
      stop: () => boss.stop({ graceful: true, timeout: 10_000 }),
    };
  },
});
