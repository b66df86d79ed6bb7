/**
 * pg-boss in the scale bench, run as a child process (see ../child.ts), in the run's database.
 *
 * pg-boss 10 is the newest release that supports Node 20 (11.x declares node >= 22, 12.x
 * >= 22.12). In pg-boss 10 a schedule is keyed by its queue name: one schedule per queue (the
 * `key` option for several schedules on one queue came with 11). So a per-user schedule is one
 * queue per user, `createQueue(u) + schedule(u, cron, data, { tz })`, and a node works every
 * user queue (`work()` once per queue; work() takes one queue name, no wildcards in 10).
 *
 * How pg-boss 10 turns a schedule into a job: every `cronMonitorIntervalSeconds` one instance
 * (a timestamp lock in the version table) reads all schedules, evaluates each cron in Node, and
 * inserts the due ones into its internal send-it queue; a send-it worker on each instance moves
 * 50 of those per `cronWorkerIntervalSeconds` into the users' queues, whose workers poll every
 * `pollingIntervalSeconds`. Configured for speed: both cron intervals at their documented
 * minimum of 1 s; see POLL_SECONDS for the user queues.
 */
import PgBoss from 'pg-boss';
import { inFlight, serveChild } from '../child.js';

const IN_FLIGHT = 64;
/**
 * Polling interval of each user queue's worker: pg-boss's default of 2 s, which was the faster
 * setting here. Its documented minimum (0.5 s) multiplies by the number of queues (10,000 queues
 * at 0.5 s ask for 20,000 fetch queries a second per node); with 1,000 queues (200 due) on one
 * node, 2 s started all 200 within 76 s, 0.5 s started 150 of 200 by 120 s, the node's event loop
 * busy with polling. `SCALE_PGBOSS_POLL_SECONDS` overrides it.
 */
const POLL_SECONDS = Number(process.env['SCALE_PGBOSS_POLL_SECONDS'] ?? 2);
const USER_QUEUE = /^u\d+$/;

serveChild({
  async seeder(config) {
    // The seeder only writes: no cron monitoring, no maintenance.
    const boss = new PgBoss({ connectionString: config.url, schedule: false, supervise: false });
    boss.on('error', (err) => process.stderr.write(`pg-boss seeder: ${String(err)}\n`));
    await boss.start();
    return {
      mode:
        '`createQueue(u)` one at a time (concurrent calls deadlock: each creates and attaches a partition), ' +
        `then \`schedule(u, cron, data, { tz })\`, ${IN_FLIGHT} in flight`,
      // createQueue takes longer the more queues there are: small chunks keep the deadline honest.
      chunk: 100,
      async upsert(batch) {
        for (const s of batch) await boss.createQueue(s.id);
        await inFlight(batch, IN_FLIGHT, (s) => boss.schedule(s.id, s.cron, { user: s.id }, { tz: s.tz }));
      },
      close: () => boss.stop({ graceful: false, wait: true }),
    };
  },

  async node({ config, started }) {
    const boss = new PgBoss({
      connectionString: config.url,
      cronMonitorIntervalSeconds: 1,
      cronWorkerIntervalSeconds: 1,
    });
    boss.on('error', (err) => process.stderr.write(`pg-boss node: ${String(err)}\n`));
    await boss.start();
    const queues = (await boss.getQueues()).map((q) => q.name).filter((n) => USER_QUEUE.test(n));
    for (const name of queues) {
      await boss.work<{ user: string }>(name, { pollingIntervalSeconds: POLL_SECONDS }, async (jobs) => {
        for (const job of jobs) started(job.data.user, null);
      });
    }
    return {
      info:
        `${queues.length} user queues, one work() each polling every ${POLL_SECONDS} s; ` +
        'cronMonitorIntervalSeconds 1, cronWorkerIntervalSeconds 1',
      stop: () => boss.stop({ graceful: true, wait: true, timeout: 10_000 }),
    };
  },
});
