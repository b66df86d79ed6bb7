import { invalidArgument } from '../../core/errors.js';
import { checkOptionNames } from '../../core/options.js';
import { nextFireTimes } from '../../schedule/fire-times.js';
import { startOfFire } from '../../schedule/jitter.js';
import type { WriteOp } from '../../store/types.js';
import { MAX_BATCH } from '../../store/validate.js';
import { type DueValue, encodeDueValue } from '../claim/page-record.js';
import { validateJobName } from '../job-options.js';
import { keys, unesc } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { type NextOptions, nextOfSchedule } from '../observe/next-runs.js';
import type { SchedulePauseInfo, StoredSchedule } from '../types.js';
import { actorOf } from './audit.js';
import { requireCalendars } from './calendars.js';
import type { PauseOptions } from './job-control.js';
import { type PageRun, pageRunsOnce, replacedRuns } from './replaced-runs.js';
import { firstCount, rememberVersion, staleCounts, withRunsLeft } from './runs-left.js';
import { opsBytes, removeAudit, upsertAudit } from './schedule-audit.js';
import {
  type StoredScheduleRecord,
  type ValidSchedule,
  validateScheduleId,
  validateSchedules,
} from './schedule-input.js';
import { pauseInfo, pauseSchedule, pausesOf, resumeSchedule } from './schedule-pause.js';

/** Ops per stored schedule in an upsert batch: sch|, schj|, due|. */
const OPS_PER_SCHEDULE = 3;
/** Bytes of records (their JSON, plus the keys) per upsert batch at most, unless one schedule is larger. */
const BATCH_BYTES = 1_000_000;
/**
 * Schedules per upsert batch: one `apply` each, with the change signal, when none changed; two
 * when all did (each changed schedule's audit entry is 3 writes more: schedule-audit.ts). Even, so
 * that the two halves of a changed batch fit (332 × 6 = 2 × 996).
 */
const SCHEDULES_PER_BATCH = 2 * Math.floor((MAX_BATCH - 1) / (2 * OPS_PER_SCHEDULE));
/** Upsert batches in flight at once. */
const PARALLEL_BATCHES = 4;
/** `list()` page size: default and maximum. */
const LIST_DEFAULT = 100;
const LIST_MAX = 1000;

/** What `scheduler.schedules.list(options)` accepts. */
export interface ListSchedulesOptions {
  /** Only this job's schedules. */
  job?: string;
  /** Cursor: only ids after this one (pass the last id of the previous page). */
  after?: string;
  /** Page size, default 100, at most 1,000. */
  limit?: number;
}

/** Options of `schedules.upsert` and `schedules.remove`. */
export interface ScheduleChangeOptions {
  /**
   * Who makes the change, for the audit trail (`scheduler.audit()`): 1-255 characters; default
   * `createScheduler({ actor })`, else the node id.
   */
  actor?: string;
}

/** `scheduler.schedules`: stored per-user/per-tenant schedules of defined jobs. */
export interface Schedules {
  /**
   * Creates or replaces schedules by id (ids are unique per store). Every entry is validated
   * first: one bad entry rejects the call (`INVALID_ARGUMENT` naming its index and field) and
   * nothing is written. Then one round trip per 333 schedules, four batches in flight. The next
   * fire time counts from the store's now: a replaced schedule's pending fire time is dropped.
   *
   * @example
   * await scheduler.schedules.upsert(users.map((u) => ({ id: `report:${u.id}`, job: 'report', cron: '0 9 * * *', timezone: u.tz, data: { user: u.id } })));
   */
  upsert: (
    schedules: StoredSchedule | readonly StoredSchedule[],
    options?: ScheduleChangeOptions,
  ) => Promise<void>;
  /**
   * Deletes a schedule (one lookup and one write, with its audit entry); `false` if there was none.
   * A string in place of the options is ignored (the job argument of earlier builds: ids are unique per store).
   */
  remove: (id: string, options?: ScheduleChangeOptions | string) => Promise<boolean>;
  /**
   * One lookup; a schedule with `maxRuns` one more (its `remainingRuns`, docs/bounds.md). With
   * `maxRuns` or `endAt` the result also says `ended`.
   */
  get: (id: string) => Promise<StoredSchedule | undefined>;
  /**
   * One page of schedules, ascending by id, after the `after` cursor.
   *
   * @example
   * for (let page = await s.list({ limit: 1000 }); page.length > 0; page = await s.list({ limit: 1000, after: page.at(-1)!.id })) …
   */
  list: (options?: ListSchedulesOptions) => Promise<StoredSchedule[]>;
  /** How many schedules are stored (of `job`): one store call. */
  count: (options?: { job?: string }) => Promise<number>;
  /**
   * The schedule's next `count` (default 5, at most 1,000) starts that will really happen,
   * ascending: fire time plus its jitter offset; `[]` while it or its job is paused. `NOT_FOUND` if
   * there is no schedule `id`. See docs/next.md.
   *
   * @example
   * const starts = await scheduler.schedules.next('report:user-42', { count: 3 });
   */
  next: (id: string, options?: NextOptions) => Promise<Date[]>;
  /**
   * Pauses one stored schedule on every node (within a poll); the job's other schedules go on.
   * `note` (at most 1,000 characters) and `actor` are kept with the pause (`get`, `list`,
   * `oncely schedules`) and in the audit trail. The fire times it misses are one `paused` skip
   * in history once it is resumed. `NOT_FOUND` if there is no schedule `id`. See docs/pause.md.
   *
   * @example
   * await scheduler.schedules.pause('report:user-42', { note: 'user on holiday', actor: 'alice' });
   */
  pause: (id: string, options?: PauseOptions) => Promise<void>;
  /**
   * Resumes a paused stored schedule on every node: what fell due while paused follows its job's
   * misfire policy; the fire times not replayed are recorded as one skipped history entry, reason
   * `paused`, with their `span`. A schedule that is not paused is left as it is.
   */
  resume: (id: string, options?: ScheduleChangeOptions) => Promise<void>;
}

/**
 * The job of a stored schedule record when it is not `entry`'s job (the schedule moves), else
 * `undefined`. Records are written id first, job second (schedule-input.ts): a record that starts
 * so is of that job without parsing it; any other is parsed.
 */
function jobOf(value: string, entry: ValidSchedule): string | undefined {
  if (value.startsWith(`{"id":${JSON.stringify(entry.id)},"job":${JSON.stringify(entry.job)},`))
    return undefined;
  const { job } = JSON.parse(value) as { job: string };
  return job === entry.job ? undefined : job;
}

function publicView(record: StoredScheduleRecord): StoredSchedule {
  const { v, ...schedule } = record;
  // With maxRuns, get/list read its remaining runs by the version (runs-left.ts).
  return rememberVersion(schedule, v);
}

function withPause(schedule: StoredSchedule, pause: SchedulePauseInfo | undefined): StoredSchedule {
  return pause === undefined ? schedule : { ...schedule, pause };
}

/** A page of schedules with their pauses (one more read, schedule-pause.ts). */
async function withPauses(state: NodeState, page: StoredSchedule[]): Promise<StoredSchedule[]> {
  const pauses = await pausesOf(
    state.store,
    page.map((s) => s.id),
  );
  return pauses.size === 0 ? page : page.map((s) => withPause(s, pauses.get(s.id)));
}

/** The stored-schedules API of one node: writes go to the store, and this node's next tick reads the due index again. */
export function createSchedules(state: NodeState): Schedules {
  const store = state.store;
  const changed = (): WriteOp => ({ op: 'put', key: keys.scheduleRevision, value: state.newId() });
  const touched = () => {
    state.dueWakeAt = 0;
    state.nextPollAt = 0;
    state.poke();
  };
  const read = async (id: string): Promise<StoredScheduleRecord | undefined> => {
    const value = await store.get(keys.schedule(validateScheduleId(id)));
    return value === null ? undefined : (JSON.parse(value) as StoredScheduleRecord);
  };
  return {
    upsert: async (input, options = {}) => {
      checkOptionNames('schedules.upsert', options, ['actor']);
      const actor = actorOf(options, state.audit, 'schedules.upsert');
      const list = await validateSchedules(Array.isArray(input) ? input : [input as StoredSchedule]);
      if (list.length === 0) return;
      // Every calendar an exclude list names must be stored (one getMany; none without calendars).
      await requireCalendars(
        store,
        list.map((x) => ({ exclude: x.exclude, what: `schedules.upsert: schedule ${JSON.stringify(x.id)}` })),
      );
      const now = await store.now();
      const nextOf = new Map<ValidSchedule['trigger'], number | undefined>();
      const base = `${state.newId()}.`;
      // The page runs in flight of a job some of whose schedules this call replaces, read once.
      const runsOf = pageRunsOnce(store);
      // Blind writes: the schedule's previous due entry (unknown without a read) keeps its old v
      // and is dropped when a node meets it.
      // The change signal goes with the only batch, or once after all of them: one key in every
      // batch would make concurrent batches wait for each other's row lock on it.
      // Batch b holds list[starts[b]] up to list[starts[b + 1]]: at most SCHEDULES_PER_BATCH
      // schedules and about BATCH_BYTES of records, so that a batch of large schedules stays
      // within what one request to the server may carry (MySQL's max_allowed_packet, etcd's
      // --max-request-bytes) — 333 schedules of 64 KiB would be 21 MB.
      const starts = [0];
      for (let at = 0, bytes = 0; at < list.length; at++) {
        const size = list[at]!.bytes + 200;
        if (
          at > starts.at(-1)! &&
          (at - starts.at(-1)! >= SCHEDULES_PER_BATCH || bytes + size > BATCH_BYTES)
        ) {
          starts.push(at);
          bytes = 0;
        }
        bytes += size;
      }
      starts.push(list.length);
      const batches = starts.length - 1;
      /** The writes of list[from, to), built when sent (all of them at once would outlive the young heap). */
      const opsOf = (
        from: number,
        to: number,
        replaced?: Pick<DueValue, 'prev' | 'replacedAt'>,
      ): WriteOp[] => {
        const ops: WriteOp[] = [];
        for (let at = from; at < to; at++) {
          const { id, job, trigger, jitter, maxRuns, json } = list[at]!;
          // New at every upsert of the id: a fresh random base per call, and the entry's place in it.
          const v = `${base}${at.toString(36)}`;
          ops.push(
            { op: 'put', key: keys.schedule(id), value: `${json},"v":"${v}"}` },
            { op: 'put', key: keys.scheduleOfJob(job, id), value: '' },
          );
          if (!nextOf.has(trigger)) nextOf.set(trigger, nextFireTimes(trigger, now, 1)[0]);
          const next = nextOf.get(trigger);
          if (next !== undefined) {
            // Keyed by when it is to start (fire time plus jitter, capped at the next gap).
            const start = startOfFire(jitter, trigger, job, id, next);
            // With maxRuns, the entry carries the count down (runs-left.ts). Replacing a stored
            // schedule, it says when, and names the old version's page run that may be going
            // (replaced-runs.ts).
            const value = encodeDueValue({
              job,
              ...(maxRuns !== undefined && { left: maxRuns }),
              ...replaced,
            });
            ops.push({ op: 'put', key: keys.dueEntry(next, id, v, start), value });
          }
          if (maxRuns !== undefined) ops.push(firstCount(id, v, maxRuns));
        }
        return ops;
      };
      let sent = 0;
      let failed: unknown;
      const worker = async () => {
        while (sent < batches && failed === undefined) {
          const b = sent++;
          const entries = list.slice(starts[b]!, starts[b + 1]!);
          try {
            // A schedule moved to another job leaves its entry in the old job's index (count and
            // list by job would still show it there): one read per batch finds those, and the
            // batch deletes them, each with its schedule's writes. Two upserts of
            // one id racing between jobs can still leave one behind (list by job then skips it).
            const before = await store.getMany(entries.map((x) => keys.schedule(x.id)));
            // Replaced schedules of the same job: their page runs that may still be going, named
            // by the new entries (replaced-runs.ts); one scan per such job and call, none for new ones.
            const replaced = entries.filter(
              (x, i) => before[i] != null && jobOf(before[i]!, x) === undefined,
            );
            const going =
              replaced.length === 0 ? new Map<string, PageRun>() : await replacedRuns(runsOf, replaced);
            // Replaced schedules with maxRuns: their remaining-runs records go (the count starts
            // again), found by one scan each, in parallel (runs-left.ts); none without maxRuns.
            const stale = await Promise.all(
              before.map((value, i) =>
                value?.includes('"maxRuns"') ? staleCounts(store, entries[i]!.id) : [],
              ),
            );
            // Each schedule's writes go with its index clean-up and its audit entry (schedule-audit.ts:
            // none for a schedule stored as it was) in one apply, so that a change never lands
            // without its entry; the batch is one apply unless they pass MAX_BATCH or BATCH_BYTES.
            // An only batch carries the change signal in its last apply (nodes read again after it).
            let ops: WriteOp[] = [];
            let bytes = 0;
            for (let at = starts[b]!; at < starts[b + 1]!; at++) {
              const value = before[at - starts[b]!];
              const prev = going.get(list[at]!.id);
              const group = opsOf(
                at,
                at + 1,
                going.has(list[at]!.id) ? { replacedAt: now, ...(prev && { prev }) } : undefined,
              );
              const old = value === null || value === undefined ? undefined : jobOf(value, list[at]!);
              if (old !== undefined) group.push({ op: 'delete', key: keys.scheduleOfJob(old, list[at]!.id) });
              group.unshift(...stale[at - starts[b]!]!);
              group.push(...upsertAudit(list[at]!, value, now, actor, state.audit));
              const size = opsBytes(group);
              if (ops.length > 0 && (ops.length + group.length >= MAX_BATCH || bytes + size > BATCH_BYTES)) {
                await store.apply(ops);
                ops = [];
                bytes = 0;
              }
              ops.push(...group);
              bytes += size;
            }
            if (batches === 1) ops.push(changed());
            await store.apply(ops);
          } catch (err) {
            failed ??= err;
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(PARALLEL_BATCHES, batches) }, worker));
      // Also after a failure: what did land should reach the nodes at their next poll.
      if (batches > 1) {
        try {
          await store.apply([changed()]);
        } catch (err) {
          failed ??= err;
        }
      }
      touched();
      if (failed !== undefined) throw failed;
    },
    pause: (id, options) => pauseSchedule(state, id, options),
    resume: (id, options) => resumeSchedule(state, id, options),
    remove: async (id, options = {}) => {
      // A string is the job argument of earlier builds (ignored: ids are unique per store).
      const o = typeof options === 'string' ? {} : options;
      checkOptionNames('schedules.remove', o, ['actor']);
      const actor = actorOf(o, state.audit, 'schedules.remove');
      const [found, at] = await Promise.all([read(id), store.now()]);
      if (!found) return false;
      // Its due entries are left to the nodes: with the schedule gone they are stale.
      const counts = found.maxRuns === undefined ? [] : await staleCounts(store, id);
      await store.apply([
        ...counts,
        { op: 'delete', key: keys.schedule(id) },
        { op: 'delete', key: keys.scheduleOfJob(found.job, id) },
        { op: 'delete', key: keys.schedulePause(id) },
        changed(),
        ...removeAudit(found, at, actor, state.audit),
      ]);
      touched();
      return true;
    },
    get: async (id) => {
      const [value, pause] = await store.getMany([
        keys.schedule(validateScheduleId(id)),
        keys.schedulePause(id),
      ]);
      if (value === null || value === undefined) return undefined;
      const [view] = await withRunsLeft(store, [publicView(JSON.parse(value) as StoredScheduleRecord)]);
      return withPause(view!, pauseInfo(pause));
    },
    list: async (options = {}) => {
      checkOptionNames('schedules.list', options, ['job', 'after', 'limit']);
      const { job, after, limit = LIST_DEFAULT } = options;
      if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX)
        throw invalidArgument(`schedules.list: limit must be an integer from 1 to ${LIST_MAX}`);
      if (after !== undefined) validateScheduleId(after);
      if (job === undefined) {
        const records = await store.scan(keys.schedulePrefix, {
          limit,
          ...(after !== undefined && { after: keys.schedule(after) }),
        });
        const page = records.map((r) => publicView(JSON.parse(r.value) as StoredScheduleRecord));
        return withPauses(state, await withRunsLeft(store, page));
      }
      validateJobName(job);
      const prefix = keys.scheduleOfJobPrefix(job);
      const index = await store.scan(prefix, {
        limit,
        ...(after !== undefined && { after: keys.scheduleOfJob(job, after) }),
      });
      const ids = index.map((r) => unesc(r.key.slice(prefix.length)));
      const values = await store.getMany(ids.map((id) => keys.schedule(id)));
      // An index entry left behind by a schedule that moved to another job (upserts are blind
      // writes) is skipped here, and dropped.
      const out: StoredSchedule[] = [];
      const leftovers: WriteOp[] = [];
      values.forEach((value, i) => {
        const record = value === null ? undefined : (JSON.parse(value) as StoredScheduleRecord);
        if (record?.job === job) out.push(publicView(record));
        else if (record) leftovers.push({ op: 'delete', key: index[i]!.key });
      });
      if (leftovers.length > 0) await store.apply(leftovers);
      return withPauses(state, await withRunsLeft(store, out));
    },
    count: async (options = {}) => {
      checkOptionNames('schedules.count', options, ['job']);
      if (options.job === undefined) return store.count(keys.schedulePrefix);
      return store.count(keys.scheduleOfJobPrefix(validateJobName(options.job)));
    },
    next: (id, options) => nextOfSchedule(store, id, options),
  };
}
