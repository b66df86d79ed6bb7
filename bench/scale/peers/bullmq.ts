/**
 * BullMQ in the scale bench, run as a child process (see ../child.ts), on the run's Redis under
 * the run's key prefix.
 *
 * - seed: one job scheduler per user, `queue.upsertJobScheduler(id, { pattern, tz }, template)`
 *   (BullMQ's way to keep recurring jobs since 5.16), 64 calls in flight on one connection; the
 *   job template removes jobs on completion, as BullMQ's production guide advises.
 * - node: one `Worker` per process with `concurrency` (the local concurrency factor BullMQ's docs
 *   give for asynchronous work) and removal on completion; the handler only records its start.
 *   A scheduler's jobs have the id `repeat:<schedulerId>:<fireTime ms>`.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { inFlight, serveChild } from '../child.js';

const QUEUE = 'scale-users';
const IN_FLIGHT = 64;

function connect(url: string): Redis {
  // Workers need maxRetriesPerRequest: null (BullMQ's connection guide); the same for the queue.
  return new Redis(url, { maxRetriesPerRequest: null });
}

serveChild({
  async seeder(config) {
    const connection = connect(config.url);
    const queue = new Queue(QUEUE, { connection, prefix: config.prefix });
    await queue.waitUntilReady();
    return {
      mode: `\`queue.upsertJobScheduler(id, { pattern, tz }, template)\`, ${IN_FLIGHT} in flight`,
      upsert: (batch) =>
        inFlight(batch, IN_FLIGHT, (s) =>
          queue.upsertJobScheduler(
            s.id,
            { pattern: s.cron, tz: s.tz },
            { name: 'user', data: { user: s.id }, opts: { removeOnComplete: true, removeOnFail: true } },
          ),
        ),
      async close() {
        await queue.close();
        await connection.quit();
      },
    };
  },

  async node({ config, started }) {
    const connection = connect(config.url);
    const worker = new Worker(
      QUEUE,
      async (job) => {
        const m = /^repeat:(.*):(\d+)$/.exec(job.id ?? '');
        started(m?.[1] ?? job.repeatJobKey ?? '?', m ? Number(m[2]) : null);
      },
      {
        connection,
        prefix: config.prefix,
        concurrency: config.concurrency,
        removeOnComplete: { count: 0 },
        removeOnFail: { count: 0 },
      },
    );
    worker.on('error', (err) => process.stderr.write(`bullmq worker: ${String(err)}\n`));
    await worker.waitUntilReady();
    return {
      info: `one Worker per process, concurrency ${config.concurrency}, removeOnComplete/removeOnFail`,
      async stop() {
        await worker.close();
        await connection.quit();
      },
    };
  },
});
