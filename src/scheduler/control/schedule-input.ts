import { invalidArgument, OncelyError } from '../../core/errors.js';
import { didYouMean } from '../../core/options.js';
import { bounded, compileBounds } from '../../schedule/bounds.js';
import { type CompiledExclude, compileExclude, cronZone } from '../../schedule/exclude.js';
import { type CompiledJitter, compileJitter } from '../../schedule/jitter.js';
import { compileShared } from '../../schedule/shared-triggers.js';
import { type CompiledTrigger, requireFires, type Trigger } from '../../schedule/trigger.js';
import { requireWellFormed } from '../../store/validate.js';
import { validateJobName } from '../job-options.js';
import { jsonText } from '../json-data.js';
import { esc } from '../keys.js';
import type { StoredSchedule } from '../types.js';

/** A stored schedule as kept under `sch|<id>`: `v` is new at every upsert (see due-index.ts). */
export type StoredScheduleRecord = StoredSchedule & { v: string };

/** A validated schedule, ready to write. */
export interface ValidSchedule {
  id: string;
  job: string;
  trigger: CompiledTrigger;
  /** Its jitter (schedule/jitter.ts): the due entry is keyed by the fire time plus its offset. */
  jitter: CompiledJitter | undefined;
  /** Its exclusions (schedule/exclude.ts): upsert checks that the calendars they name exist. */
  exclude: CompiledExclude | undefined;
  /** Its run limit (schedule/bounds.ts; `trigger` carries startAt/endAt): the due entry counts it down (runs-left.ts). */
  maxRuns?: number;
  /** `JSON.stringify(schedule)` minus the closing brace (the version is appended per write). */
  json: string;
  /** UTF-8 bytes of the record's JSON (upsert batches are cut by it). */
  bytes: number;
}

const FIELDS = new Set([
  'id',
  'job',
  'cron',
  'every',
  'at',
  'timezone',
  'jitter',
  'startAt',
  'endAt',
  'maxRuns',
  'exclude',
  'data',
]);
/** Fields `get`/`list` add that an upsert accepts and ignores (a schedule read, changed and written back). */
const READ_ONLY = new Set(['pause', 'remainingRuns', 'ended']);

/**
 * The largest stored schedule, as its JSON record (id, job, trigger and `data`): 64 KiB. Larger
 * `data` belongs in the application's own tables, keyed by what the schedule carries. Every page
 * and poll that lists schedules reads whole records (10 MB of `data` each made one dashboard page
 * weigh 300 MB).
 */
export const MAX_SCHEDULE_BYTES = 64 * 1024;

/** Entries validated between two turns of the event loop (a million at once blocked it 17 s). */
const VALIDATE_SLICE = 1_000;

/** Throws `INVALID_ARGUMENT` unless `id` can be a stored schedule's id. */
export function validateScheduleId(id: unknown): string {
  // Ids are parts of occurrence and index keys: 200 characters each as stored (keys.ts).
  if (typeof id !== 'string' || id === '' || esc(id).length > 200 || /\p{Cc}/u.test(id))
    throw invalidArgument("id must be 1-200 printable characters ('|' and '%' count 3)");
  requireWellFormed(id, 'id');
  return id;
}

/**
 * Validates every entry of an upsert before anything is written: one bad entry rejects the call
 * with `INVALID_ARGUMENT` naming its index and field. An id given twice: the later entry wins.
 * Yields to the event loop every VALIDATE_SLICE entries, so that a bulk upsert does not stall the
 * process's other work (its own scheduler's keep-alives among it).
 */
export async function validateSchedules(input: readonly unknown[]): Promise<ValidSchedule[]> {
  const byId = new Map<string, ValidSchedule>();
  for (let from = 0; from < input.length; from += VALIDATE_SLICE) {
    if (from > 0) await new Promise((resolve) => setImmediate(resolve));
    const end = Math.min(input.length, from + VALIDATE_SLICE);
    for (let i = from; i < end; i++) validateOne(input[i], i, byId);
  }
  return [...byId.values()];
}

/** Validates one entry (see validateSchedules), adding it to `byId`. */
function validateOne(raw: unknown, i: number, byId: Map<string, ValidSchedule>): void {
  const where = (field: string) => `schedules.upsert: entry ${i}: ${field}`;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw invalidArgument(
      `${where('entry')} must be an object { id, job, cron | every | at, timezone?, jitter?, data? }`,
    );
  const s = raw as Record<string, unknown>;
  const unknown = Object.keys(s).find((k) => !FIELDS.has(k) && !READ_ONLY.has(k));
  if (unknown !== undefined)
    throw invalidArgument(
      `${where(unknown)}: unknown field${didYouMean(unknown, [...FIELDS])}; allowed: ${[...FIELDS].join(', ')}`,
    );
  const field = (name: string, check: () => void) => {
    try {
      check();
    } catch (err) {
      if (!(err instanceof OncelyError)) throw err;
      throw invalidArgument(`${where(name)}: ${err.message}`);
    }
  };
  field('id', () => validateScheduleId(s.id));
  field('job', () => validateJobName(s.job));
  const {
    id,
    job,
    data,
    jitter: jitterInput,
    exclude: excludeInput,
    pause: _pause,
    ...triggerFields
  } = s as unknown as StoredSchedule;
  const rest = jitterInput === undefined ? triggerFields : { ...triggerFields, jitter: jitterInput };
  const { startAt, endAt, maxRuns: runs, ...plainTrigger } = triggerFields;
  let trigger!: CompiledTrigger;
  const triggerField = ['cron', 'every', 'at'].find((k) => s[k] !== undefined) ?? 'cron | every | at';
  field(triggerField, () => {
    // Each distinct trigger is compiled once per process (shared-triggers.ts).
    const what = `schedule ${JSON.stringify(id)}`;
    trigger = requireFires(compileShared(plainTrigger as Trigger, what), what);
  });
  let jitter: CompiledJitter | undefined;
  field('jitter', () => {
    jitter = compileJitter(jitterInput, trigger, `schedule ${JSON.stringify(id)}`);
  });
  let exclude: CompiledExclude | undefined;
  field('exclude', () => {
    exclude = compileExclude(excludeInput, cronZone(trigger), `schedule ${JSON.stringify(id)}`);
  });
  let maxRuns: number | undefined;
  // startAt/endAt bound the trigger (schedule/bounds.ts); maxRuns is counted down by the due entry.
  // Each checked on its own first, so that the error names the field; then their order (endAt's).
  const what = `schedule ${JSON.stringify(id)}`;
  if (startAt !== undefined) field('startAt', () => compileBounds({ startAt }, what));
  if (endAt !== undefined) field('endAt', () => compileBounds({ endAt }, what));
  if (runs !== undefined) field('maxRuns', () => compileBounds({ maxRuns: runs }, what));
  field('endAt', () => {
    const limits = compileBounds({ startAt, endAt, maxRuns: runs }, what);
    trigger = bounded(trigger, limits);
    maxRuns = limits?.maxRuns;
  });
  let json = '';
  let bytes = 0;
  field('data', () => {
    const excluding = excludeInput === undefined ? {} : { exclude: excludeInput };
    json = jsonText({ id, job, ...rest, ...excluding, ...(data !== undefined && { data }) }, '');
    bytes = Buffer.byteLength(json);
    if (bytes > MAX_SCHEDULE_BYTES)
      throw invalidArgument(
        `the schedule as JSON is ${bytes} bytes; at most ${MAX_SCHEDULE_BYTES} (64 KiB) are stored: keep large data in your own tables and put its key in data`,
      );
    requireWellFormed(json, 'the schedule as JSON');
  });
  byId.delete(id);
  byId.set(id, {
    id,
    job,
    trigger,
    jitter,
    exclude,
    ...(maxRuns !== undefined && { maxRuns }),
    json: json.slice(0, -1),
    bytes,
  });
}
