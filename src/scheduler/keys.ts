/**
 * Where the scheduler keeps its state in the store. Every key is built here, from escaped parts,
 * so two different (job, schedule, fire time, shard) tuples can never produce the same key.
 *
 *   leases   occ|<job>|<schedule>|<fireTime>|<shard>   the occurrence claim; released with a
 *                                                       hold ("done") after the run
 *            run|<job>|<shard>[|<schedule>]             fleet-wide "a run of this job (shard, stored
 *                                                       schedule) is going" (overlap skip/queue)
 *   records  job|<job>                                  job registry entry (definition, outlives nodes)
 *            hwm|<job>|                                 latest fire time of the job's own trigger handled (run,
 *                                                       or missed and skipped)
 *            sch|<id>                                   a stored schedule, authoritative: { id, job, trigger, data, v }
 *                                                       (`v` new at every upsert); ids are unique per store
 *            schj|<job>|<id>                            '' — the per-job index of stored schedules (list, count)
 *            due|<fireTime>|<id>|<v>                    { job } — the schedule's next unhandled fire time (the due
 *                                                       index); `v` in the key: an entry whose v is not the
 *                                                       schedule's is stale (never run, deleted when met).
 *                                                       With jitter: due|<fireTime + offset>|<id>|<v>|<fireTime>
 *            hist|<job>|<fireTime>|<schedule>|<shard>|<attempt>  one per finished attempt (ttl = retention)
 *            node|<node>                                heartbeat (ttl)
 *            aud|<id>                                   an audit trail entry (control/audit.ts; ttl = audit
 *                                                       retention); <id> = <15-digit store time>-<seq><random>,
 *                                                       so a reverse scan is newest first
 *            audj|<job>|<id>, auds|<schedule>|<id>      '' — the entries of one job / one stored schedule
 *            ctl|…                                      everything a poll reads, under one prefix so that
 *                                                       one scan per poll sees all of it:
 *            ctl|pause|<job>                            present = paused, cluster-wide
 *            ctl|spause|<id>                            present = the stored schedule is paused, cluster-wide
 *                                                       (control/schedule-pause.ts)
 *            ctl|pspan|<job>|<id>                       a pause that ended lately (of the job: id empty), kept
 *                                                       a few minutes: the missed fire times it left are
 *                                                       recorded as one `paused` span (control/pause-span.ts)
 *            ctl|srev                                   rewritten by every upsert/remove of stored schedules:
 *                                                       the change signal every poll sees (due-index.ts)
 *            ctl|trig|<job>|<id>                        a manual trigger request
 *            ctl|bf|<job>|<schedule>|<fireTime>|<shard> a backfill request: one past occurrence to run once
 *                                                       (control/backfill.ts, backfill-requests.ts)
 *            ctl|pending|<job>|<shard>|<schedule>|<fireTime>  a queued occurrence of a gate (overlap queue): one
 *                                                       record per fire time, so queueing never overwrites; the
 *                                                       reader runs a gate's latest and records the older ones
 *                                                       skipped (requests.ts). Earlier builds wrote one record
 *                                                       per gate, without `|<fireTime>`: still read, not written
 *            ctl|run|<job>|<schedule>|<fireTime>|<shard> a claimed run not finished yet ("in flight"):
 *                                                       read by recovery, and shown by history() as running
 *            ctl|page|<job>|<page>                      a page of occurrences claimed under one lease and not
 *                                                       finished yet (page/page-record.ts): the in-flight
 *                                                       record of all its runs
 *            dueend|<id>|<v>                            where a due entry moves when its trigger has no next
 *                                                       fire time (a page's move needs a target; expires)
 *            left|<id>|<v>|<n>                          '' — a stored schedule with maxRuns: n of its runs may still
 *                                                       start (control/runs-left.ts); moved with its due entry
 *            cal|<id>                                   a calendar: { id, dates: ['YYYY-MM-DD', …], timezone? }
 *                                                       (control/calendars.ts); read once per node and cached
 *            ctl|crev                                   rewritten by every calendar upsert/remove: nodes drop
 *                                                       their cached calendars when it changes (calendar-cache.ts)
 *            go|<lease key>|<token>                     `<store time>[|<item>,…]` — the holder of that lease called its
 *                                                       handlers through then (run/invoked-mark.ts): what a skip
 *                                                       for overlap may name; deleted with the run's finish
 *   leases   page|<job>|<page>                          a page's lease (kept alive while any of its runs goes)
 *            bfcall|<job>|<id>                          a backfill() call's writes (control/backfill.ts), released at once
 *            mvcall|<job>|<id>                          a due entry's move past a fire time run elsewhere
 *                                                       (due/move-past.ts), released at once
 *
 * Fire times are zero-padded epoch ms (15 digits), so a prefix scan returns them in time order.
 * `|` and `%` inside names are escaped as %7C and %25.
 */
/** Job names and schedule ids rarely hold `%` or `|`: one scan finds out (keys are built ~10 times per run). */
const NEEDS_ESCAPE = /[%|]/;

export function esc(part: string): string {
  return NEEDS_ESCAPE.test(part) ? part.replace(/%/g, '%25').replace(/\|/g, '%7C') : part;
}

export function unesc(part: string): string {
  return part.includes('%') ? part.replace(/%7C/g, '|').replace(/%25/g, '%') : part;
}

export function timeKey(ms: number): string {
  return String(ms).padStart(15, '0');
}

export interface OccurrenceId {
  job: string;
  /** `undefined` for the job's own trigger; a stored schedule's id; `manual:<id>` for trigger(). */
  scheduleId: string | undefined;
  fireTime: number;
  /** Shard index, `undefined` when the job is not sharded. */
  shard: number | undefined;
}

function occParts(o: OccurrenceId): string {
  return `${esc(o.job)}|${esc(o.scheduleId ?? '')}|${timeKey(o.fireTime)}|${o.shard ?? ''}`;
}

/**
 * The overlap scope of an occurrence: its stored schedule's id; `undefined` for the job's own
 * trigger and for manual triggers (`manual:<id>`), which share the job's gate.
 */
export function gateScope(o: { scheduleId?: string | undefined }): string | undefined {
  return o.scheduleId === undefined || o.scheduleId.startsWith('manual:') ? undefined : o.scheduleId;
}

/**
 * The overlap gate key an occurrence runs under: its stored schedule's own gate, the job's for a
 * job trigger or a manual trigger (which shares the job's gate).
 */
export function gateOf(o: {
  job: string;
  scheduleId?: string | undefined;
  shard?: number | undefined;
}): string {
  return keys.runGate(o.job, gateScope(o), o.shard);
}

function pendingOfGate(job: string, scope: string | undefined, shard: number | undefined): string {
  return `ctl|pending|${esc(job)}|${shard ?? ''}|${esc(scope ?? '')}`;
}

export const keys = {
  occurrence: (o: OccurrenceId) => `occ|${occParts(o)}`,
  inflight: (o: OccurrenceId) => `ctl|run|${occParts(o)}`,
  inflightPrefix: (job?: string) => (job === undefined ? 'ctl|run|' : `ctl|run|${esc(job)}|`),
  /** The occurrence lease key an in-flight record stands for. */
  occurrenceOfInflight: (inflightKey: string) => `occ|${inflightKey.slice('ctl|run|'.length)}`,
  /** Every record a poll reads starts with this (one scan per poll). */
  controlPrefix: 'ctl|',
  /**
   * The overlap gate of one stream of runs: the job's own trigger (and its manual triggers), or one
   * stored schedule; per shard. Stored schedules get a gate each: per-user schedules of one job
   * that share a fire time (every user's 09:00 report) must not skip or queue behind each other.
   */
  runGate: (job: string, scope: string | undefined, shard: number | undefined) =>
    scope === undefined ? `run|${esc(job)}|${shard ?? ''}` : `run|${esc(job)}|${shard ?? ''}|${esc(scope)}`,
  job: (job: string) => `job|${esc(job)}`,
  jobPrefix: 'job|',
  pause: (job: string) => `ctl|pause|${esc(job)}`,
  pausePrefix: 'ctl|pause|',
  /** A stored schedule's pause (`schedules.pause(id)`): present = paused. */
  schedulePause: (id: string) => `ctl|spause|${esc(id)}`,
  schedulePausePrefix: 'ctl|spause|',
  /** A pause that ended lately: of the job's own trigger and all its schedules (no id), or of one stored schedule. */
  pauseSpan: (job: string, scheduleId: string | undefined) =>
    `ctl|pspan|${esc(job)}|${esc(scheduleId ?? '')}`,
  highWater: (job: string, scheduleId: string | undefined) => `hwm|${esc(job)}|${esc(scheduleId ?? '')}`,
  /**
   * A queued occurrence (overlap queue) of a gate's stream (same scope as {@link keys.runGate}), one
   * per fire time: two fire times queued behind one long run are two records, never one overwriting
   * the other (which lost the first fire time without a trace).
   */
  pending: (job: string, scope: string | undefined, shard: number | undefined, fireTime: number) =>
    `${pendingOfGate(job, scope, shard)}|${timeKey(fireTime)}`,
  /** The key of a gate's one queued occurrence as earlier builds wrote it (read, not written). */
  pendingOfGate: (job: string, scope: string | undefined, shard: number | undefined) =>
    pendingOfGate(job, scope, shard),
  pendingPrefix: (job: string) => `ctl|pending|${esc(job)}|`,
  history: (o: OccurrenceId, attempt: number) =>
    `hist|${esc(o.job)}|${timeKey(o.fireTime)}|${esc(o.scheduleId ?? '')}|${o.shard ?? ''}|${String(attempt).padStart(4, '0')}`,
  historyPrefix: (job: string) => `hist|${esc(job)}|`,
  /** Every attempt's history record of one occurrence. */
  occurrenceHistoryPrefix: (o: OccurrenceId) =>
    `hist|${esc(o.job)}|${timeKey(o.fireTime)}|${esc(o.scheduleId ?? '')}|${o.shard ?? ''}|`,
  audit: (id: string) => `aud|${id}`,
  auditPrefix: 'aud|',
  auditOfJob: (job: string, id: string) => `audj|${esc(job)}|${id}`,
  auditOfJobPrefix: (job: string) => `audj|${esc(job)}|`,
  auditOfSchedule: (scheduleId: string, id: string) => `auds|${esc(scheduleId)}|${id}`,
  auditOfSchedulePrefix: (scheduleId: string) => `auds|${esc(scheduleId)}|`,
  node: (node: string) => `node|${esc(node)}`,
  nodePrefix: 'node|',
  schedule: (id: string) => `sch|${esc(id)}`,
  schedulePrefix: 'sch|',
  scheduleOfJob: (job: string, id: string) => `schj|${esc(job)}|${esc(id)}`,
  scheduleOfJobPrefix: (job: string) => `schj|${esc(job)}|`,
  /**
   * A stored schedule's due entry, keyed by when its occurrence is to start (`at`: the fire time
   * plus its jitter, schedule/jitter.ts), so that the index stays in start order and a scan stops
   * at the first entry not due; a jittered entry carries its nominal fire time as a fifth part.
   */
  dueEntry: (fireTime: number, id: string, v: string, at = fireTime) =>
    at === fireTime
      ? `due|${timeKey(fireTime)}|${esc(id)}|${v}`
      : `due|${timeKey(at)}|${esc(id)}|${v}|${timeKey(fireTime)}`,
  /**
   * The remaining runs of a stored schedule with `maxRuns` (control/runs-left.ts): `n` in the key,
   * so that the claim that moves the due entry moves it too (`n` to `n - 1`), exactly once.
   */
  runsLeft: (id: string, v: string, n: number) => `left|${esc(id)}|${v}|${timeKey(n)}`,
  /** Every remaining-runs record of schedule `id` (of version `v`). */
  runsLeftPrefix: (id: string, v?: string) => `left|${esc(id)}|${v === undefined ? '' : `${v}|`}`,
  /** Where a page moves a due entry whose trigger has no next fire time. */
  dueEnded: (id: string, v: string) => `dueend|${esc(id)}|${v}`,
  /** A page's lease; `page` is its id (node and a random part, see page/page-record.ts). */
  pageLease: (job: string, page: string) => `page|${esc(job)}|${page}`,
  /** The mark of a run (or page) that called its handlers, by its lease and token (run/invoked-mark.ts). */
  invoked: (leaseKey: string, token: number) => `go|${leaseKey}|${token}`,
  /** A page's record (a control record: every poll sees the pages in flight). */
  pageRecord: (job: string, page: string) => `ctl|page|${esc(job)}|${page}`,
  pageRecordPrefix: (job?: string) => (job === undefined ? 'ctl|page|' : `ctl|page|${esc(job)}|`),
  duePrefix: 'due|',
  /** The change signal of the stored schedules (a `ctl|` record, so every poll reads it anyway). */
  scheduleRevision: 'ctl|srev',
  triggerRequest: (job: string, id: string) => `ctl|trig|${esc(job)}|${esc(id)}`,
  triggerPrefix: 'ctl|trig|',
  triggerRequestPrefix: (job: string) => `ctl|trig|${esc(job)}|`,
  /**
   * A backfill request (`scheduler.backfill()`): the occurrence to run once. Keyed like the
   * occurrence, so a scan returns each stream's requests oldest first, and two callers asking
   * for one occurrence create one request (put-if-absent).
   */
  backfillRequest: (o: OccurrenceId) => `ctl|bf|${occParts(o)}`,
  /** The lease a `backfill()` call writes its requests under (put-if-absent is a page's `create`); released at once. */
  backfillCall: (job: string, id: string) => `bfcall|${esc(job)}|${id}`,
  /** The lease a move of a due entry past a fire time run elsewhere goes under (due/move-past.ts); released at once. */
  entryMove: (job: string, id: string) => `mvcall|${esc(job)}|${id}`,
  /** A calendar (`scheduler.calendars`): { id, dates, timezone? }. Not under `ctl|`: polls do not read it. */
  calendar: (id: string) => `cal|${esc(id)}`,
  calendarPrefix: 'cal|',
  /** The calendars' change signal: rewritten by every calendar upsert/remove; each poll reads it with the `ctl|` scan. */
  calendarRevision: 'ctl|crev',
} as const;

/**
 * A history key read back: `hist|<job>|<fireTime>|<schedule>|<shard>|<attempt>` (keys.history);
 * undefined for a key of another shape. An empty schedule part is the job's own trigger.
 */
export function parseHistoryKey(key: string): { occ: OccurrenceId; attempt: number } | undefined {
  const parts = key.split('|');
  if (parts.length !== 6 || parts[0] !== 'hist') return undefined;
  const fireTime = Number(parts[2]);
  const attempt = Number(parts[5]);
  const shard = parts[4] === '' ? undefined : Number(parts[4]);
  if (!Number.isSafeInteger(fireTime) || !Number.isSafeInteger(attempt)) return undefined;
  if (shard !== undefined && !Number.isSafeInteger(shard)) return undefined;
  return {
    occ: {
      job: unesc(parts[1]!),
      scheduleId: parts[3] === '' ? undefined : unesc(parts[3]!),
      fireTime,
      shard,
    },
    attempt,
  };
}

/** Reads the job name back out of a `<kind>|<job>|…` or `ctl|<kind>|<job>|…` key. */
export function jobOfKey(key: string): string {
  const parts = key.split('|');
  return unesc(parts[parts[0] === 'ctl' ? 2 : 1] ?? '');
}

/**
 * The fire time `key` is the plain due entry of — `keys.dueEntry(n, id, v)`, no jitter: `due|<15
 * digits>|<escaped id>|<v>` — or undefined. Read in place, without building that key again: a
 * page's record asks it of every item it writes (claim/page-record.ts). Fifteen digits are
 * always a fire time's own `timeKey` (below 10^15, padded).
 */
export function plainDueFireTime(key: string, id: string, v: string): number | undefined {
  const eid = esc(id);
  if (key.length !== 21 + eid.length + v.length || !key.startsWith('due|')) return undefined;
  let n = 0;
  for (let i = 4; i < 19; i++) {
    const d = key.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return undefined;
    n = n * 10 + d;
  }
  const bar = 20 + eid.length;
  return key.charCodeAt(19) === 124 &&
    key.startsWith(eid, 20) &&
    key.charCodeAt(bar) === 124 &&
    key.endsWith(v)
    ? n
    : undefined;
}

/**
 * A due index key read back: `due|<at>|<id>|<v>[|<fireTime>]` — `fireTime` the occurrence's
 * nominal fire time, `at` when it is to start (the same without jitter).
 */
export function parseDueEntry(key: string): { fireTime: number; at: number; id: string; v: string } {
  // By index, not split(): read for every row of every due-index scan.
  const t = key.indexOf('|') + 1;
  const i = key.indexOf('|', t) + 1;
  const w = i === 0 ? -1 : key.indexOf('|', i) + 1;
  const n = w <= 0 ? -1 : key.indexOf('|', w) + 1;
  const at = Number(i === 0 ? key.slice(t) : key.slice(t, i - 1));
  const id = i === 0 ? '' : unesc(w <= 0 ? key.slice(i) : key.slice(i, w - 1));
  const v = w <= 0 ? '' : n <= 0 ? key.slice(w) : key.slice(w, n - 1);
  const nominal =
    n <= 0 ? undefined : key.slice(n, key.indexOf('|', n) < 0 ? undefined : key.indexOf('|', n));
  return { fireTime: nominal === undefined ? at : Number(nominal), at, id, v };
}

/** The kind of a control record (`pause`, `srev`, `trig`, `pending`, `run`, `page`), from its key. */
export function controlKind(key: string): string {
  return key.split('|')[1] ?? '';
}
