import type { WriteOp } from '../../store/types.js';
import { type AuditContext, auditOps, canonicalJson, scheduleSnapshot } from './audit.js';
import type { ValidSchedule } from './schedule-input.js';

/**
 * The audit entries of stored schedule changes (`schedules.upsert`, `schedules.remove`), built
 * from what the upsert's batch read of the records (schedules.ts reads them anyway, to find
 * schedules that moved between jobs): no extra round trip.
 */

/**
 * The audit writes of upserting `entry` over the stored record `value` (`null`: none), at store
 * time `at`: none when the stored schedule is the same (a re-upsert of an unchanged schedule adds
 * nothing; fields in another order count as the same), else one `schedules.upsert` entry with the
 * schedule before (if any) and after, `data` capped (audit.ts).
 */
export function upsertAudit(
  entry: ValidSchedule,
  value: string | null | undefined,
  at: number,
  actor: string,
  ctx: AuditContext,
): WriteOp[] {
  // The record is the entry's JSON with its version appended: the common case, unchanged, is one
  // comparison of text.
  if (value?.startsWith(`${entry.json},"v":`)) return [];
  const after = JSON.parse(`${entry.json}}`) as Record<string, unknown>;
  let before: Record<string, unknown> | undefined;
  if (value !== null && value !== undefined) {
    const { v: _v, ...stored } = JSON.parse(value) as Record<string, unknown>;
    if (canonicalJson(stored) === canonicalJson(after)) return [];
    before = scheduleSnapshot(stored);
  }
  return auditOps(
    {
      action: 'schedules.upsert',
      target: entry.id,
      job: entry.job,
      scheduleId: entry.id,
      actor,
      ...(before !== undefined && { before }),
      after: scheduleSnapshot(after),
    },
    at,
    ctx,
  );
}

/** The audit writes of removing the stored schedule `record` (its JSON as stored), at store time `at`. */
export function removeAudit(
  record: { id: string; job: string },
  at: number,
  actor: string,
  ctx: AuditContext,
): WriteOp[] {
  return auditOps(
    {
      action: 'schedules.remove',
      target: record.id,
      job: record.job,
      scheduleId: record.id,
      actor,
      before: scheduleSnapshot(record as unknown as Record<string, unknown>),
    },
    at,
    ctx,
  );
}

/** UTF-8 bytes of a batch's writes (keys and values), to keep a request within what a server takes. */
export function opsBytes(ops: readonly WriteOp[]): number {
  let bytes = 0;
  for (const op of ops) bytes += op.key.length + (op.op === 'put' ? Buffer.byteLength(op.value) : 0) + 16;
  return bytes;
}
