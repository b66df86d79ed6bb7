import { invalidArgument, OncelyError } from '../../core/errors.js';
import { checkOptionNames } from '../../core/options.js';
import { nextFireTimes } from '../../schedule/fire-times.js';
import { type CompiledJitter, compileJitter } from '../../schedule/jitter.js';
import { type CompiledTrigger, compileTrigger, type Trigger } from '../../schedule/trigger.js';
import type { PageOp } from '../../store/types.js';
import { MAX_BATCH } from '../../store/validate.js';
import { CONSUMED_TTL_MS, lookUp } from '../claim/backfill-claim.js';
import { validateJobName } from '../job-options.js';
import { keys, type OccurrenceId } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { actorOf, auditOps } from './audit.js';
import type { BackfillRequest } from './backfill-requests.js';
import { type StoredScheduleRecord, validateScheduleId } from './schedule-input.js';

/**
 * `scheduler.backfill()` (issue 32 item 4): every fire time of a trigger in a past range that has
 * not run is run once (source `backfill`). The call computes the fire times with the scheduler's
 * own pure function (schedule/fire-times.ts) from the records the nodes write (the job record, the
 * stored schedule) — it needs no `define()` in the calling process — drops those that have run or
 * are going (claim/backfill-claim.ts; one queued behind its overlap gate has not run), and writes
 * one request per remaining occurrence (each shard of each fire time) with put-if-absent: two
 * calls at once, on two nodes, create each request once, and `queued` counts the requests this
 * call created. The nodes that define the job run them (control/backfill-requests.ts,
 * claim/backfill-claim.ts). See docs/backfill.md.
 */

/** What `scheduler.backfill(options)` accepts. */
export interface BackfillOptions {
  /** The job (1-255 characters). */
  job: string;
  /** A stored schedule of the job: backfill its fire times; absent: the job's own trigger's. */
  scheduleId?: string;
  /** The range's start, inclusive: a `Date`, an ISO-8601 string or epoch ms. */
  from: Date | string | number;
  /** The range's end, exclusive; after `from`, and not after the store's clock (backfill is for the past). */
  to: Date | string | number;
  /** Who asks, for the audit trail (1-255 characters; default `createScheduler({ actor })`, else the node id). */
  actor?: string;
}

/** What `scheduler.backfill()` returns. */
export interface BackfillResult {
  /** The runs this call queued: occurrences in the range that had not run, and that no other call had queued. */
  queued: number;
}

/** The most occurrences (fire times times shards) one `backfill()` call may cover. */
export const MAX_BACKFILL_OCCURRENCES = 10_000;

/** The misfire threshold of a job whose record does not say (the `define()` default). */
const DEFAULT_THRESHOLD_MS = 1000;

/** The part of the job record (control/feed.ts `registerJobs`) this reads. */
interface JobRecordView {
  trigger: Trigger | null;
  options: { misfireThresholdMs?: number; jitter?: CompiledJitter; shards?: number | null };
}

function instant(value: unknown, where: string, field: string): number {
  const ms =
    value instanceof Date
      ? value.getTime()
      : typeof value === 'number'
        ? value
        : typeof value === 'string' && value.length <= 64
          ? Date.parse(value)
          : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 0)
    throw invalidArgument(
      `${where}: ${field} must be a Date, an ISO-8601 string or epoch ms (a whole number); got ${JSON.stringify(value) ?? String(value)}`,
    );
  return ms;
}

/** The trigger fields of a stored schedule record (its other fields are not the trigger's). */
function scheduleTrigger(r: StoredScheduleRecord): Trigger {
  const t = r as unknown as Record<string, unknown>;
  if (t['cron'] !== undefined)
    return {
      cron: t['cron'] as string,
      ...(t['timezone'] !== undefined && { timezone: t['timezone'] as string }),
    };
  if (t['every'] !== undefined) return { every: t['every'] as string };
  return { at: t['at'] as string };
}

/** `scheduler.backfill(options)`: see the file comment. */
export async function backfill(state: NodeState, options: BackfillOptions): Promise<BackfillResult> {
  const where = 'backfill';
  checkOptionNames(where, options, ['job', 'scheduleId', 'from', 'to', 'actor']);
  const job = validateJobName(options.job);
  const scheduleId = options.scheduleId === undefined ? undefined : validateScheduleId(options.scheduleId);
  const actor = actorOf(options, state.audit, where);
  const from = instant(options.from, where, 'from');
  const to = instant(options.to, where, 'to');
  if (!(from < to))
    throw invalidArgument(
      `${where}: from (${new Date(from).toISOString()}) must be before to (${new Date(to).toISOString()}); the range is [from, to)`,
    );
  const [jobValue, scheduleValue, now] = await Promise.all([
    state.store.get(keys.job(job)),
    scheduleId === undefined ? null : state.store.get(keys.schedule(scheduleId)),
    state.store.now(),
  ]);
  if (to > now)
    throw invalidArgument(
      `${where}: to (${new Date(to).toISOString()}) is after the store's clock (${new Date(now).toISOString()}); backfill is for fire times that have passed`,
    );
  if (jobValue === null)
    throw new OncelyError(
      'NOT_FOUND',
      `${where}: no job named ${JSON.stringify(job)} is recorded in this store; check the name, or define it on a node (scheduler.define) and start that node`,
    );
  const record = JSON.parse(jobValue) as JobRecordView;
  let trigger: CompiledTrigger;
  let jitterMs = record.options.jitter?.maxMs ?? 0;
  if (scheduleId !== undefined) {
    const schedule = scheduleValue === null ? undefined : (JSON.parse(scheduleValue) as StoredScheduleRecord);
    if (schedule?.job !== job)
      throw new OncelyError(
        'NOT_FOUND',
        `${where}: job ${JSON.stringify(job)} has no stored schedule ${JSON.stringify(scheduleId)}${schedule ? ` (it is a schedule of ${JSON.stringify(schedule.job)})` : ''}; check the id (schedules.list({ job }) shows them)`,
      );
    const what = `schedule ${JSON.stringify(scheduleId)}`;
    trigger = compileTrigger(scheduleTrigger(schedule), what);
    jitterMs =
      schedule.jitter === undefined ? 0 : (compileJitter(schedule.jitter, undefined, what)?.maxMs ?? 0);
  } else {
    if (record.trigger === null)
      throw invalidArgument(
        `${where}: job ${JSON.stringify(job)} has no trigger of its own (it runs from stored schedules and trigger()); pass scheduleId`,
      );
    trigger = compileTrigger(record.trigger, `job ${JSON.stringify(job)}`);
  }
  // A fire time whose start may still be on time is the scheduler's own (claimed at its start, or
  // by the misfire policy): left to it, never backfilled. The range ends before the first of them.
  const threshold = record.options.misfireThresholdMs ?? DEFAULT_THRESHOLD_MS;
  const end = Math.min(to, now - threshold - jitterMs);
  const shards = record.options.shards ?? undefined;
  const fires = fireTimesIn(trigger, from, end, Math.floor(MAX_BACKFILL_OCCURRENCES / (shards ?? 1)) + 1);
  if (fires.length * (shards ?? 1) > MAX_BACKFILL_OCCURRENCES)
    throw invalidArgument(
      `${where}: [${new Date(from).toISOString()}, ${new Date(to).toISOString()}) holds more than ${MAX_BACKFILL_OCCURRENCES} occurrences (fire times${shards ? ` times ${shards} shards` : ''}); at most ${MAX_BACKFILL_OCCURRENCES} per call: split the range`,
    );
  const occs: OccurrenceId[] = fires.flatMap((fireTime): OccurrenceId[] =>
    shards === undefined
      ? [{ job, scheduleId, fireTime, shard: undefined }]
      : Array.from({ length: shards }, (_, shard) => ({ job, scheduleId, fireTime, shard })),
  );
  const readAt = performance.now();
  let found = occs.length === 0 ? [] : await lookUp(state.store, job, occs);
  // A slow call reads again: a marker of a request consumed since the read may have expired.
  if (performance.now() - readAt > CONSUMED_TTL_MS / 2) found = await lookUp(state.store, job, occs);
  // Queued behind its overlap gate is not run: its request waits for its queue (backfill-claim.ts).
  const creates: Extract<PageOp, { op: 'create' }>[] = occs
    .filter((_, i) => found[i] !== 'ran')
    .map((o) => {
      const request: BackfillRequest = {
        job,
        ...(scheduleId !== undefined && { scheduleId }),
        fireTime: o.fireTime,
        ...(o.shard !== undefined && { shard: o.shard }),
        requestedAt: now,
      };
      const value = JSON.stringify(request);
      return { op: 'create' as const, key: keys.backfillRequest(o), value, ttlMs: state.retentionMs };
    });
  let queued = 0;
  for (let i = 0; i < creates.length; i += MAX_BATCH)
    queued += await createAll(state, job, creates.slice(i, i + MAX_BATCH));
  // The entry goes after the requests: it says how many this call queued.
  await state.store.apply(
    auditOps(
      {
        action: 'backfill',
        target: scheduleId ?? job,
        job,
        ...(scheduleId !== undefined && { scheduleId }),
        actor,
        after: { from: new Date(from).toISOString(), to: new Date(to).toISOString(), queued },
      },
      now,
      state.audit,
    ),
  );
  if (queued > 0) {
    state.nextPollAt = 0;
    state.poke();
  }
  return { queued };
}

/** The trigger's fire times in [from, end), at most `limit` (ascending). */
function fireTimesIn(trigger: CompiledTrigger, from: number, end: number, limit: number): number[] {
  const out: number[] = [];
  let after = from - 1;
  while (out.length < limit && after < end - 1) {
    const chunk = nextFireTimes(trigger, after, Math.min(1000, limit - out.length));
    if (chunk.length === 0) break;
    for (const f of chunk) {
      if (f >= end || out.length >= limit) return out;
      out.push(f);
    }
    after = chunk.at(-1)!;
  }
  return out;
}

/**
 * Creates the requests that do not exist yet (put-if-absent: two calls at once create each once)
 * and returns how many this call created. Put-if-absent is `claimPage`'s `create`, so it goes
 * under a lease of its own (a fresh key, released at once). A store without pages (a third-party
 * store) gets plain puts of the requests found absent: still one request per occurrence, but two
 * calls at once may both count one.
 */
async function createAll(
  state: NodeState,
  job: string,
  creates: Extract<PageOp, { op: 'create' }>[],
): Promise<number> {
  const { store } = state;
  if (!store.capabilities.pages) {
    const found = await store.getMany(creates.map((c) => c.key));
    const absent = creates.filter((_, i) => (found[i] ?? null) === null);
    if (absent.length > 0) await store.apply(absent.map((c) => ({ ...c, op: 'put' as const })));
    return absent.length;
  }
  const { lease, results } = await store.claimPage(
    { key: keys.backfillCall(job, state.newId()), owner: state.node, leaseMs: 60_000 },
    creates,
  );
  if (lease === null) throw new OncelyError('INTERNAL', 'backfill: a fresh lease key was refused; try again');
  await store.release(lease.key, lease.token);
  return results.filter((created) => created).length;
}
