/**
 * The environment of one run of a jobs-file command: `oncely run`'s own environment **without
 * any `ONCELY_*` variable**, then the job's `env`, then the per-run `ONCELY_*` variables (which
 * win; shard and schedule variables are always set, empty when not applicable, so `set -u`
 * scripts work).
 *
 * Invariant: nothing of oncely's configuration reaches a command unless its jobs file says so.
 * `ONCELY_*` is oncely's namespace: `ONCELY_STORE` (the store URL, with its password),
 * `ONCELY_DASHBOARD_TOKEN`, `ONCELY_DEBUG`, and whatever setting is added later, are all dropped
 * by prefix rather than by a list that could miss one. A job that needs the store names it in its
 * own `env` (e.g. `DATABASE_URL`).
 */
import type { JobContext } from '../scheduler/types.js';
import type { CliJob } from './jobs-file.js';

const ONCELY_PREFIX = 'ONCELY_';

/** `parent` without oncely's own variables. */
export function inheritedEnv(parent: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(parent).filter(([name]) => !name.startsWith(ONCELY_PREFIX)));
}

/** The environment of one run (see the file comment). */
export function commandEnv(
  job: CliJob,
  ctx: JobContext,
  node: string,
  parent: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  return {
    ...inheritedEnv(parent),
    ...job.env,
    ONCELY_JOB: ctx.job,
    ONCELY_FIRE_TIME: ctx.fireTime.toISOString(),
    ONCELY_NODE: node,
    ONCELY_TOKEN: String(ctx.token),
    ONCELY_ATTEMPT: String(ctx.attempt),
    ONCELY_SCHEDULE_ID: ctx.scheduleId ?? '',
    ONCELY_SHARD_INDEX: ctx.shard ? String(ctx.shard.index) : '',
    ONCELY_SHARD_COUNT: ctx.shard ? String(ctx.shard.count) : '',
    ONCELY_SHARD_PARAM: ctx.shard?.param ?? '',
  };
}
