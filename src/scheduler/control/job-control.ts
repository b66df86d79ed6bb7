import { checkOptionNames } from '../../core/options.js';
import { validateJobName } from '../job-options.js';
import { jsonText } from '../json-data.js';
import { keys } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { actorOf, auditOps, cappedData, validateNote } from './audit.js';
import { endPause } from './pause-span.js';

/**
 * The cluster-wide control calls on a job — `pause`, `resume`, `trigger` — each one `apply` that
 * writes the change and its audit entry together (control/audit.ts).
 */

/** What a pause record (`ctl|pause|<job>`) holds; `actor` and `note` since the audit trail. */
export interface PauseRecord {
  /** The node that paused the job. */
  by: string;
  /** Store time of the pause (epoch ms). */
  at: number;
  /** Who paused it (see AuditEntry.actor). */
  actor?: string;
  /** Why, as given to `pause(job, { note })`. */
  note?: string;
}

/** Options of `scheduler.pause(job, options)`. */
export interface PauseOptions {
  /** Why it is paused (at most 1,000 characters): kept with the pause and in the audit trail. */
  note?: string;
  /** Who pauses it (1-255 characters; default `createScheduler({ actor })`, else the node id). */
  actor?: string;
}

/** Options of `scheduler.trigger(job, options)`. */
export interface TriggerOptions {
  /** Handed to the handler as `ctx.data` (JSON). */
  data?: unknown;
  /** Who triggers it (1-255 characters; default `createScheduler({ actor })`, else the node id). */
  actor?: string;
}

function checkOptions(where: string, options: unknown, allowed: string[]): Record<string, unknown> {
  checkOptionNames(where, options, allowed);
  return options as Record<string, unknown>;
}

/** A pause record as an audit snapshot: `{ paused: false }` when there is none. */
function pauseSnapshot(value: string | null): Record<string, unknown> {
  if (value === null) return { paused: false };
  const r = JSON.parse(value) as PauseRecord;
  return {
    paused: true,
    since: new Date(r.at).toISOString(),
    ...(r.actor !== undefined && { by: r.actor }),
    ...(r.note !== undefined && { note: r.note }),
  };
}

/** Store time now: the node's estimate when it has one, else one read. */
async function storeNow(state: NodeState): Promise<number> {
  return state.storeClock.sampled() ? Math.round(state.storeClock.estimate()) : state.store.now();
}

/** `scheduler.pause(job, options)`: the pause record (with actor and note) and its audit entry. */
export async function pauseJob(state: NodeState, job: string, options: PauseOptions = {}): Promise<void> {
  validateJobName(job);
  const where = `pause(${JSON.stringify(job)})`;
  const o = checkOptions(where, options, ['note', 'actor']);
  const actor = actorOf(o, state.audit, where);
  const note = o['note'] === undefined ? undefined : validateNote(o['note'], where);
  const [at, before] = await Promise.all([state.store.now(), state.store.get(keys.pause(job))]);
  // Pausing a paused job keeps when it was paused (its `paused` span starts there) and replaces the note.
  const since = before === null ? at : (JSON.parse(before) as PauseRecord).at;
  const record: PauseRecord = { by: state.node, at: since, actor, ...(note !== undefined && { note }) };
  const value = JSON.stringify(record);
  await state.store.apply([
    { op: 'put', key: keys.pause(job), value },
    ...auditOps(
      {
        action: 'pause',
        target: job,
        job,
        actor,
        before: pauseSnapshot(before),
        after: pauseSnapshot(value),
        ...(note !== undefined && { note }),
      },
      at,
      state.audit,
    ),
  ]);
  state.pauseHere(job, true);
}

/** `scheduler.resume(job, options)`: the pause record deleted, and its audit entry. */
export async function resumeJob(
  state: NodeState,
  job: string,
  options: { actor?: string } = {},
): Promise<void> {
  validateJobName(job);
  const where = `resume(${JSON.stringify(job)})`;
  const actor = actorOf(checkOptions(where, options, ['actor']), state.audit, where);
  const [at, before, marker] = await Promise.all([
    storeNow(state),
    state.store.get(keys.pause(job)),
    state.store.get(keys.pauseSpan(job, undefined)),
  ]);
  // The pause's span marker (pause-span.ts): the fire times it left are recorded as one `paused` skip.
  const ended =
    before === null
      ? undefined
      : endPause(job, undefined, (JSON.parse(before) as PauseRecord).at, at, marker);
  await state.store.apply([
    { op: 'delete', key: keys.pause(job) },
    ...(ended ? [ended.op] : []),
    ...auditOps(
      { action: 'resume', target: job, job, actor, before: pauseSnapshot(before), after: { paused: false } },
      at,
      state.audit,
    ),
  ]);
  state.pauseHere(job, false);
  if (ended) state.pauseEndedHere(ended.key, ended.span);
  state.nextPollAt = 0;
  state.poke();
}

/** `scheduler.trigger(job, options)`: a trigger request (kept for the history retention) and its audit entry. */
export async function triggerJob(state: NodeState, job: string, options: TriggerOptions = {}): Promise<void> {
  validateJobName(job);
  const where = `trigger(${JSON.stringify(job)})`;
  const o = checkOptions(where, options, ['data', 'actor']);
  const actor = actorOf(o, state.audit, where);
  const id = state.newId();
  const requestedAt = await state.store.now();
  const value = jsonText({ id, job, requestedAt, data: o['data'] }, `${where} data`);
  await state.store.apply([
    { op: 'put', key: keys.triggerRequest(job, id), value, ttlMs: state.retentionMs },
    ...auditOps(
      {
        action: 'trigger',
        target: job,
        job,
        actor,
        after: { request: id, ...(o['data'] !== undefined && { data: cappedData(o['data']) }) },
      },
      requestedAt,
      state.audit,
    ),
  ]);
  state.nextPollAt = 0;
  state.poke();
}
