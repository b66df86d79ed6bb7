import { invalidArgument } from '../../core/errors.js';
import { randomId } from '../../core/ids.js';
import type { WriteOp } from '../../store/types.js';
import { requireWellFormed } from '../../store/validate.js';
import type { AuditEntry } from '../audit-types.js';
import { keys, timeKey } from '../keys.js';

/**
 * The audit trail's write side: who changed what. Every change a node makes through the API —
 * a changed job definition, a stored schedule upserted or removed, a pause, resume or trigger — is
 * one entry, written in the same `apply` as the change itself (no extra round trip, and never a
 * change without its entry nor an entry without its change). Entries expire after the audit
 * retention (`auditRetention`, default the history retention) and are swept like history.
 *
 * An entry is one record under `aud|<id>` (the whole entry) and an empty index record per job
 * (`audj|<job>|<id>`) and per stored schedule (`auds|<id>|<id>`) it concerns; the id starts with
 * the zero-padded store time, so each prefix scanned in reverse is newest first (audit-query.ts).
 */

/** Longest actor (characters). */
export const MAX_ACTOR_LENGTH = 255;
/** Longest note (characters). */
export const MAX_NOTE_LENGTH = 1000;
/** A snapshot's `data` larger than this as JSON (bytes) is stored as `{ truncated: true, bytes }`. */
export const MAX_SNAPSHOT_DATA_BYTES = 1024;

/** One entry as stored under `aud|<id>`: an AuditEntry with its time in epoch ms. */
export type AuditRecord = Omit<AuditEntry, 'at'> & { at: number };

/** Who and how long: what a node's writer fills in for each entry. */
export interface AuditContext {
  /** The actor when a call gives none: `createScheduler({ actor })`, else the node id. */
  actor: string;
  /** Entries expire after this long (ms). */
  retentionMs: number;
  /**
   * The time of this writer's latest entry (epoch ms): a scheduler's entries never go back in
   * time, so they keep its call order. Per writer, not per process: a process that runs several
   * schedulers on stores of their own (tests, the simulator's runs one after another, each from
   * the same epoch) gave every later one the earlier one's latest time.
   */
  lastAt?: number;
}

/** Throws `INVALID_ARGUMENT` unless `actor` can name who made a change; `where` names the call. */
export function validateActor(actor: unknown, where: string): string {
  if (typeof actor !== 'string' || actor === '' || actor.length > MAX_ACTOR_LENGTH || /\p{Cc}/u.test(actor))
    throw invalidArgument(
      `${where}: actor must be 1-${MAX_ACTOR_LENGTH} printable characters (who made the change, e.g. a user name); got ${describe(actor)}`,
    );
  requireWellFormed(actor, `${where}: actor`);
  return actor;
}

/** Throws `INVALID_ARGUMENT` unless `note` is text of at most MAX_NOTE_LENGTH characters (line breaks and tabs allowed). */
export function validateNote(note: unknown, where: string): string {
  if (typeof note !== 'string' || note.length > MAX_NOTE_LENGTH || /[^\P{Cc}\n\t]/u.test(note))
    throw invalidArgument(
      `${where}: note must be text of at most ${MAX_NOTE_LENGTH} characters (no control characters but line breaks and tabs); got ${describe(note)}`,
    );
  requireWellFormed(note, `${where}: note`);
  return note;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `${value.length} characters`;
  return value === null ? 'null' : typeof value;
}

/** The actor of a call: its own `actor` option if given (validated), else the node's. */
export function actorOf(options: { actor?: unknown }, ctx: AuditContext, where: string): string {
  return options.actor === undefined ? ctx.actor : validateActor(options.actor, where);
}

let sequence = 0;

/**
 * A new entry id: the store time (never behind the writer's previous id, so one scheduler's
 * entries keep their call order), a per-process sequence (the order within one millisecond) and
 * a random part (two processes in one millisecond never collide).
 */
function newId(at: number, ctx: AuditContext): { id: string; at: number } {
  const when = Math.max(ctx.lastAt ?? 0, Math.round(at));
  ctx.lastAt = when;
  sequence = (sequence + 1) % 36 ** 8;
  return { id: `${timeKey(when)}-${sequence.toString(36).padStart(8, '0')}${randomId(3)}`, at: when };
}

/** What `audit({ after })` accepts: an entry id as {@link newId} makes it. */
export const AUDIT_ID = /^\d{15}-[0-9a-z]{8}[A-Za-z0-9_-]{4}$/;

/** The fields of one entry a change supplies (the id and time are added by {@link auditOps}). */
export type AuditChange = Omit<AuditRecord, 'id' | 'at' | 'actor'> & { actor?: string };

/**
 * The writes of one entry made at store time `at`, to go in the same `apply` as the change: the
 * entry, and an index record for its job and its stored schedule.
 */
export function auditOps(change: AuditChange, at: number, ctx: AuditContext): WriteOp[] {
  const { id, at: when } = newId(at, ctx);
  const { actor = ctx.actor, action, target, ...rest } = change;
  const record: AuditRecord = { id, at: when, actor, action, target, ...rest };
  const ttlMs = ctx.retentionMs;
  const ops: WriteOp[] = [{ op: 'put', key: keys.audit(id), value: JSON.stringify(record), ttlMs }];
  if (change.job !== undefined)
    ops.push({ op: 'put', key: keys.auditOfJob(change.job, id), value: '', ttlMs });
  if (change.scheduleId !== undefined)
    ops.push({ op: 'put', key: keys.auditOfSchedule(change.scheduleId, id), value: '', ttlMs });
  return ops;
}

/**
 * `data` as an audit snapshot keeps it: as it is up to MAX_SNAPSHOT_DATA_BYTES of JSON, else
 * `{ truncated: true, bytes }` (a stored schedule's data may be 64 KiB, and may hold what the
 * audit trail need not repeat).
 */
export function cappedData(data: unknown): unknown {
  if (data === undefined) return undefined;
  const bytes = Buffer.byteLength(JSON.stringify(data) ?? '');
  return bytes > MAX_SNAPSHOT_DATA_BYTES ? { truncated: true, bytes } : data;
}

/** A stored schedule (or its record) as an audit snapshot: its version dropped, its data capped. */
export function scheduleSnapshot(schedule: Record<string, unknown>): Record<string, unknown> {
  const { v: _v, data, ...rest } = schedule;
  return data === undefined ? rest : { ...rest, data: cappedData(data) };
}

/** `value` as JSON with every object's keys sorted: equal for two values that differ only in key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/** Bytes an entry's writes take at most besides its two snapshots (keys, ids, actor, note). */
export const AUDIT_OVERHEAD_BYTES = 2 * 1024 + 4 * MAX_ACTOR_LENGTH + 4 * MAX_NOTE_LENGTH;

/** The id an index record stands for: the last `|` part of its key. */
export function idOfIndexKey(key: string): string {
  return key.slice(key.lastIndexOf('|') + 1);
}

/** A job record (feed.ts `registerJobs`) as an audit snapshot: its definition, without who wrote it when. */
function definition(value: string): Record<string, unknown> {
  const { definedBy: _by, updatedAt: _at, ...rest } = JSON.parse(value) as Record<string, unknown>;
  return rest;
}

/**
 * The audit entries (`define`) of the job records `puts` about to be written, given what the store
 * held under their keys (`before`, as read just before): one for each job new to the store or whose
 * trigger or options differ; none for a job recorded as it was. Nodes that start together with a
 * new definition may each record it (the read and the write are not one step).
 */
export function definitionChanges(
  puts: readonly WriteOp[],
  before: readonly (string | null)[],
  at: number,
  ctx: AuditContext,
): WriteOp[] {
  const ops: WriteOp[] = [];
  puts.forEach((op, i) => {
    if (op.op !== 'put') return;
    const after = definition(op.value);
    const old = before[i] ?? null;
    const was = old === null ? undefined : definition(old);
    if (was !== undefined && canonicalJson(was) === canonicalJson(after)) return;
    const job = String(after['name']);
    ops.push(
      ...auditOps(
        { action: 'define', target: job, job, ...(was !== undefined && { before: was }), after },
        at,
        ctx,
      ),
    );
  });
  return ops;
}
