import { invalidArgument } from '../../core/errors.js';
import { checkOptionNames } from '../../core/options.js';
import type { Store } from '../../store/types.js';
import { AUDIT_ID, type AuditRecord, idOfIndexKey } from '../control/audit.js';
import { validateScheduleId } from '../control/schedule-input.js';
import { validateJobName } from '../job-options.js';
import { keys } from '../keys.js';
import type { AuditEntry, AuditQuery } from '../types.js';

/**
 * The audit trail's read side (entries are written by control/audit.ts). Newest first: every
 * entry id starts with its zero-padded store time, so a reverse scan of `aud|` (all entries),
 * `audj|<job>|` or `auds|<schedule>|` (one job's or one schedule's index) is in time order, and
 * `after: id` continues exactly after an entry. Without a filter a page is one scan; with one,
 * one scan of the index and one `getMany` of the entries (again while expired entries left the
 * page short).
 */

/** Page size: default and maximum. */
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

function decode(value: string): AuditEntry {
  const record = JSON.parse(value) as AuditRecord;
  return { ...record, at: new Date(record.at) };
}

/** Throws `INVALID_ARGUMENT` unless `after` is an audit entry's id (`AuditEntry.id`). */
export function validateAuditCursor(after: unknown): string {
  if (typeof after !== 'string' || !AUDIT_ID.test(after))
    throw invalidArgument(
      'audit: after must be the id of an audit entry (the last id of the previous page), e.g. 001767225600000-00000001AbCd',
    );
  return after;
}

/** Validates an audit query (`INVALID_ARGUMENT` naming the field). */
function checkQuery(query: AuditQuery): Required<Pick<AuditQuery, 'limit'>> & AuditQuery {
  checkOptionNames('audit', query, ['job', 'scheduleId', 'after', 'limit']);
  if (query.job !== undefined) validateJobName(query.job);
  if (query.scheduleId !== undefined) {
    try {
      validateScheduleId(query.scheduleId);
    } catch (err) {
      throw invalidArgument(`audit: scheduleId: ${(err as Error).message}`);
    }
  }
  const limit = query.limit ?? DEFAULT_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw invalidArgument(
      `audit: limit must be a whole number from 1 to ${MAX_LIMIT}; got ${String(query.limit)}`,
    );
  if (query.after !== undefined) validateAuditCursor(query.after);
  return { ...query, limit };
}

/** One page of the audit trail, newest first, strictly older than `after` (see the module comment). */
export async function queryAudit(store: Store, query: AuditQuery = {}): Promise<AuditEntry[]> {
  const { job, scheduleId, after, limit } = checkQuery(query);
  if (job === undefined && scheduleId === undefined) {
    const records = await store.scan(keys.auditPrefix, {
      reverse: true,
      limit,
      ...(after !== undefined && { after: keys.audit(after) }),
    });
    return records.map((r) => decode(r.value));
  }
  const prefix =
    scheduleId !== undefined ? keys.auditOfSchedulePrefix(scheduleId) : keys.auditOfJobPrefix(job!);
  const out: AuditEntry[] = [];
  let cursor = after === undefined ? undefined : prefix + after;
  for (;;) {
    const want = limit - out.length;
    const index = await store.scan(prefix, {
      reverse: true,
      limit: want,
      ...(cursor !== undefined && { after: cursor }),
    });
    if (index.length === 0) return out;
    cursor = index.at(-1)!.key;
    const values = await store.getMany(index.map((r) => keys.audit(idOfIndexKey(r.key))));
    for (const value of values) {
      if (value === null) continue; // expired (its index record outlived it by a sweep's delay)
      const entry = decode(value);
      // A schedule that moved between jobs: its entries under another job are not this job's.
      if (job === undefined || entry.job === job) out.push(entry);
    }
    if (out.length >= limit || index.length < want) return out;
  }
}
