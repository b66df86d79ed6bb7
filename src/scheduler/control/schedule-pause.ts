import { OncelyError } from '../../core/errors.js';
import { checkOptionNames } from '../../core/options.js';
import type { Store } from '../../store/types.js';
import { MAX_BATCH } from '../../store/validate.js';
import { keys, unesc } from '../keys.js';
import type { NodeState } from '../node-state.js';
import type { SchedulePauseInfo } from '../types.js';
import { actorOf, auditOps, validateNote } from './audit.js';
import type { PauseOptions } from './job-control.js';
import { endPause } from './pause-span.js';
import { validateScheduleId } from './schedule-input.js';

/**
 * `schedules.pause(id)` / `schedules.resume(id)`: one stored schedule stops firing on every node
 * within a poll, the job's other schedules go on.
 *
 * The pause is a control record, `ctl|spause|<id>` (below), which every poll reads with the other
 * `ctl|` records: each node keeps the paused ids in memory (`NodeState.pausedSchedules`). The
 * schedule's due entry stays where it is, at the first fire time not claimed: the due index passes
 * over it (due-index.ts, as over a paused job's entries) and a tick never offers it (due.ts), so a
 * paused schedule costs no claim, no store call of its own, only its key in the due reads that
 * pass it. A claim sent just before a node saw the pause may still run one fire time (the pause is
 * in force within a poll, as a job's is). On resume the entry is due again: what it missed is
 * handled by the job's misfire policy, as after a job's resume, and recorded as one `paused` span
 * (pause-span.ts). An upsert keeps the pause (the record is by id); a remove deletes it.
 */

/** What `ctl|spause|<id>` holds. */
interface SchedulePauseRecord {
  /** The schedule's job (the resume's span marker is per job and id). */
  job: string;
  /** The node that paused it. */
  by: string;
  /** Store time of the pause (epoch ms); a second pause keeps the first one's. */
  at: number;
  /** Who paused it. */
  actor: string;
  /** Why. */
  note?: string;
}

/** The pause record `value` (as stored) as `schedules.get(id)` shows it. */
export function pauseInfo(value: string | null | undefined): SchedulePauseInfo | undefined {
  if (value === null || value === undefined) return undefined;
  const r = JSON.parse(value) as SchedulePauseRecord;
  return {
    since: new Date(r.at),
    ...(r.actor !== undefined && { actor: r.actor }),
    ...(r.note !== undefined && { note: r.note }),
  };
}

/** A pause record as an audit snapshot: `{ paused: false }` when there is none. */
function snapshot(value: string | null): Record<string, unknown> {
  const info = pauseInfo(value);
  if (info === undefined) return { paused: false };
  const { since, actor, note } = info;
  return {
    paused: true,
    since: since.toISOString(),
    ...(actor !== undefined && { by: actor }),
    ...(note !== undefined && { note }),
  };
}

/** The schedule's job, or NOT_FOUND naming the call. */
function jobOf(value: string | null, id: string, where: string): string {
  if (value === null)
    throw new OncelyError(
      'NOT_FOUND',
      `${where}: no stored schedule has the id ${JSON.stringify(id)}; check the id (schedules.list shows them)`,
    );
  return (JSON.parse(value) as { job: string }).job;
}

/**
 * `schedules.pause(id, { note?, actor? })`: the pause record and its audit entry in one apply, with
 * the stored schedules' change signal (every node reads the due index again at its next poll).
 * Pausing a paused schedule keeps its start and replaces the note. NOT_FOUND for an unknown id.
 */
export async function pauseSchedule(state: NodeState, id: string, options: PauseOptions = {}): Promise<void> {
  validateScheduleId(id);
  const where = `schedules.pause(${JSON.stringify(id)})`;
  checkOptionNames(where, options, ['note', 'actor']);
  const actor = actorOf(options, state.audit, where);
  const note = options.note === undefined ? undefined : validateNote(options.note, where);
  const store = state.store;
  const [at, [schedule, before]] = await Promise.all([
    store.now(),
    store.getMany([keys.schedule(id), keys.schedulePause(id)]),
  ]);
  const job = jobOf(schedule ?? null, id, where);
  const since = before ? (JSON.parse(before) as SchedulePauseRecord).at : at;
  const record: SchedulePauseRecord = {
    job,
    by: state.node,
    at: since,
    actor,
    ...(note !== undefined && { note }),
  };
  const value = JSON.stringify(record);
  await store.apply([
    { op: 'put', key: keys.schedulePause(id), value },
    { op: 'put', key: keys.scheduleRevision, value: state.newId() },
    ...auditOps(
      {
        action: 'schedules.pause',
        target: id,
        job,
        scheduleId: id,
        actor,
        before: snapshot(before ?? null),
        after: snapshot(value),
        ...(note !== undefined && { note }),
      },
      at,
      state.audit,
    ),
  ]);
  state.schedulePausedHere(id, true);
}

/**
 * `schedules.resume(id, { actor? })`: the pause record deleted, the span marker of the pause
 * (pause-span.ts) and the audit entry written, in one apply. Resuming a schedule that is not
 * paused changes nothing and records nothing. NOT_FOUND for an unknown id.
 */
export async function resumeSchedule(
  state: NodeState,
  id: string,
  options: { actor?: string } = {},
): Promise<void> {
  validateScheduleId(id);
  const where = `schedules.resume(${JSON.stringify(id)})`;
  checkOptionNames(where, options, ['actor']);
  const actor = actorOf(options, state.audit, where);
  const store = state.store;
  const [at, [schedule, before]] = await Promise.all([
    store.now(),
    store.getMany([keys.schedule(id), keys.schedulePause(id)]),
  ]);
  const job = jobOf(schedule ?? null, id, where);
  if (before === null || before === undefined) return;
  const since = (JSON.parse(before) as SchedulePauseRecord).at;
  const ended = endPause(job, id, since, at, await store.get(keys.pauseSpan(job, id)));
  await store.apply([
    { op: 'delete', key: keys.schedulePause(id) },
    ended.op,
    { op: 'put', key: keys.scheduleRevision, value: state.newId() },
    ...auditOps(
      {
        action: 'schedules.resume',
        target: id,
        job,
        scheduleId: id,
        actor,
        before: snapshot(before),
        after: { paused: false },
      },
      at,
      state.audit,
    ),
  ]);
  state.schedulePausedHere(id, false);
  state.pauseEndedHere(ended.key, ended.span);
  state.dueWakeAt = 0;
  state.nextPollAt = 0;
  state.poke();
}

/** The pauses of the stored schedules `ids` (one getMany per 1,000), by id: for `list` and the dashboard. */
export async function pausesOf(
  store: Store,
  ids: readonly string[],
): Promise<Map<string, SchedulePauseInfo>> {
  const out = new Map<string, SchedulePauseInfo>();
  if (ids.length === 0) return out;
  const chunks: string[][] = [];
  for (let i = 0; i < ids.length; i += MAX_BATCH) chunks.push(ids.slice(i, i + MAX_BATCH));
  const values = (
    await Promise.all(chunks.map((c) => store.getMany(c.map((id) => keys.schedulePause(id)))))
  ).flat();
  ids.forEach((id, i) => {
    const info = pauseInfo(values[i]);
    if (info) out.set(id, info);
  });
  return out;
}

/** The most paused schedules `pausedSchedules` lists (`oncely status` shows them). */
export const MAX_PAUSED_LISTED = 1000;

/**
 * The paused stored schedules, ascending by id, at most `limit` (1-1,000): one scan of their pause
 * records, for `oncely status`.
 */
export async function pausedSchedules(
  store: Store,
  limit: number,
): Promise<(SchedulePauseInfo & { id: string; job: string })[]> {
  const records = await store.scan(keys.schedulePausePrefix, { limit: Math.min(limit, MAX_PAUSED_LISTED) });
  return records.map((r) => {
    const { job } = JSON.parse(r.value) as SchedulePauseRecord;
    return { id: unesc(r.key.slice(keys.schedulePausePrefix.length)), job, ...pauseInfo(r.value)! };
  });
}
