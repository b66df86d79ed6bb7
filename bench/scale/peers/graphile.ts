/**
 * graphile-worker in the scale bench, run as a child process (see ../child.ts), in the run's
 * database.
 *
 * graphile-worker's cron is a static crontab (UTC, one job per item and minute), not a store of
 * per-user schedules; for per-user work its docs point to one cron task that fans out with
 * `addJobs`. So the per-user schedules are rows of an application table
 * (`scale_user_schedule(id, tz, hour, minute)`, indexed on `(tz, hour, minute)`), and one crontab
 * item runs `scale_fanout` every minute: it reads the users whose local time is that minute (one
 * index lookup per time zone) and adds one `scale_user` job per user with `addJobs`, 10,000 per
 * call. Nothing else is done to make the fan-out idempotent (no job keys), as the fastest setup.
 *
 * Worker settings: those of the docs' performance page (concurrentJobs 24, maxPoolSize 25,
 * localQueue size 500, completeJobBatchDelay 0, failJobBatchDelay 0).
 */
import { Logger, run, runMigrations, type Task } from 'graphile-worker';
import pg from 'pg';
import { serveChild } from '../child.js';

const TABLE = 'scale_user_schedule';
const ADD_BATCH = 10_000;

/** The users due at `$1` (a minute): one index lookup per distinct time zone (a loose index scan). */
const DUE_SQL = `
  WITH RECURSIVE zone AS (
    (SELECT tz FROM ${TABLE} ORDER BY tz LIMIT 1)
    UNION ALL
    SELECT (SELECT s.tz FROM ${TABLE} s WHERE s.tz > zone.tz ORDER BY s.tz LIMIT 1)
    FROM zone WHERE zone.tz IS NOT NULL
  )
  SELECT s.id FROM zone
  JOIN ${TABLE} s ON s.tz = zone.tz
    AND s.hour = extract(hour FROM $1::timestamptz AT TIME ZONE zone.tz)
    AND s.minute = extract(minute FROM $1::timestamptz AT TIME ZONE zone.tz)`;

const UPSERT_SQL = `
  INSERT INTO ${TABLE} (id, tz, hour, minute)
  SELECT * FROM unnest($1::text[], $2::text[], $3::smallint[], $4::smallint[])
  ON CONFLICT (id) DO UPDATE SET tz = excluded.tz, hour = excluded.hour, minute = excluded.minute`;

/** Errors only: the default logger prints every start and stop. */
const quiet = new Logger(() => (level, message) => {
  if (level === 'error') process.stderr.write(`graphile-worker: ${message}\n`);
});

serveChild({
  async seeder(config) {
    await runMigrations({ connectionString: config.url, logger: quiet });
    const pool = new pg.Pool({ connectionString: config.url, max: 2 });
    await pool.query(
      `CREATE TABLE IF NOT EXISTS ${TABLE} (id text PRIMARY KEY, tz text NOT NULL, hour smallint NOT NULL, minute smallint NOT NULL)`,
    );
    await pool.query(`CREATE INDEX IF NOT EXISTS ${TABLE}_due ON ${TABLE} (tz, hour, minute)`);
    return {
      mode: 'rows of an application table, one multi-row `INSERT … ON CONFLICT` per 5,000',
      async upsert(batch) {
        const ids: string[] = [];
        const zones: string[] = [];
        const hours: number[] = [];
        const minutes: number[] = [];
        for (const s of batch) {
          const [minute, hour] = s.cron.split(' ');
          ids.push(s.id);
          zones.push(s.tz);
          hours.push(Number(hour));
          minutes.push(Number(minute));
        }
        await pool.query(UPSERT_SQL, [ids, zones, hours, minutes]);
      },
      close: () => pool.end(),
    };
  },

  async node({ config, started }) {
    const scale_fanout: Task = async (payload, helpers) => {
      const ts = (payload as { _cron?: { ts: string } })._cron?.ts;
      if (ts === undefined) return;
      const fire = Date.parse(ts);
      const { rows } = await helpers.withPgClient((client) => client.query<{ id: string }>(DUE_SQL, [ts]));
      for (let i = 0; i < rows.length; i += ADD_BATCH) {
        await helpers.addJobs(
          rows
            .slice(i, i + ADD_BATCH)
            .map((r) => ({ identifier: 'scale_user', payload: { user: r.id, fire } })),
        );
      }
    };
    const scale_user: Task = (payload) => {
      const p = payload as { user: string; fire: number };
      started(p.user, p.fire);
    };
    const runner = await run({
      connectionString: config.url,
      noHandleSignals: true,
      logger: quiet,
      taskList: { scale_fanout, scale_user },
      crontab: '* * * * * scale_fanout',
      preset: {
        worker: {
          concurrentJobs: 24,
          maxPoolSize: 25,
          localQueue: { size: 500 },
          completeJobBatchDelay: 0,
          failJobBatchDelay: 0,
        },
      },
    });
    return {
      info:
        'concurrentJobs 24, maxPoolSize 25, localQueue.size 500, completeJobBatchDelay 0, failJobBatchDelay 0; ' +
        `crontab \`* * * * * scale_fanout\`, addJobs ${ADD_BATCH.toLocaleString('en-US')} per call`,
      stop: () => runner.stop(),
    };
  },
});
