import { occFields } from '../finish/history.js';
import { keys, type OccurrenceId, plainDueFireTime } from '../keys.js';
import type { HistoryEntry, RunSource } from '../types.js';

/**
 * A page: up to ~1,000 occurrences of one job, claimed in one `claimPage` under one lease
 * (`page|<job>|<id>`), recorded in one control record (`ctl|page|<job>|<id>`) that stands for all
 * of its runs while they go — what an in-flight record is for one run — and deleted, with the
 * lease released, once every run's outcome is stored. See docs/design/pages.md.
 *
 * The record is written twice: in the claim itself (the items asked for, `started` absent), then
 * once the claim is answered and before any handler starts (`started`: which items this page won,
 * the token, when). A record without `started` is a claim that never got to start: its won items
 * are recovered (never a reason to skip another fire time). Written again by a node that takes
 * the page over after its lease lapsed (recovery), with that node's token and the attempts.
 */
export interface PageRecord {
  job: string;
  /** The node that holds (or last held) the page. */
  node: string;
  /** The page's lease length (ms): a record is not looked at for recovery before `claimedAt + leaseMs`. */
  leaseMs: number;
  items: PageItem[];
  started?: PageStart;
}

/** One occurrence of a page: a stored schedule's due entry at `fireTime`, moved to `to` by the claim. */
export interface PageItem {
  /** The stored schedule's id and version. */
  id: string;
  v: string;
  fireTime: number;
  /** When it was to start (fire time plus the schedule's jitter), when that is not its fire time. */
  at?: number;
  /** The due entry's key after the move (its next fire time, or `dueend|…`). */
  to: string;
  /**
   * `run`: a run of the fire time; `skip`: recorded skipped for overlap with the start (its history
   * is written with the page's start); `settle`: only the move (missed and skipped, or jumped over).
   */
  kind: 'run' | 'skip' | 'settle';
  source: RunSource;
  /** The attempt this page runs (1, or the next one after a dead run). */
  attempt?: number;
  /** (`skip`) the run it overlapped. */
  by?: { fireTime: number; node?: string | undefined; token?: number | undefined };
  /** (`skip`) `excluded`: the fire time matches the schedule's exclude list (no `by`); absent: overlap. */
  reason?: 'excluded';
}

export interface PageStart {
  /** Store time (the claim's estimate) at which the page's runs started, or its first holder's did. */
  at: number;
  /** Store time of the grant: the lease cannot end before `claimedAt + leaseMs`. */
  claimedAt: number;
  /** The token of the holder that wrote this start. */
  token: number;
  /** Indexes (into `items`) of the items this page won. */
  won: number[];
  /**
   * The first run of the page, when this start is a recovery's: its items have been running, from
   * the fleet's point of view, since then (a later fire time of one of its schedules is fairly
   * skipped for overlap behind it, naming that run).
   */
  since?: { at: number; node: string; token: number };
}

/** What a due entry moved by a page says: which page moved it, and the run the next claim judges overlap by. */
export interface DueValue {
  job: string;
  /** The page whose claim moved the entry here (recovery of a page that never started reads it). */
  page?: string;
  /** The page run of an earlier fire time that may still be going, and that fire time. */
  prev?: { page: string; fireTime: number };
  /** (A schedule with maxRuns, control/runs-left.ts) the runs that may still start, this fire time's included. */
  left?: number;
  /** Moved here by the settle of a pause's span (control/pause-span.ts): a span settled here later is not the pause's. */
  spanned?: true;
  /** (Written by an upsert that replaced the schedule) store time of that upsert (control/replaced-runs.ts). */
  replacedAt?: number;
}

/** The occurrence an item stands for. */
export function itemOcc(job: string, item: PageItem): OccurrenceId {
  return { job, scheduleId: item.id, fireTime: item.fireTime, shard: undefined };
}

/** The page's keys. */
export function pageKeys(job: string, page: string): { lease: string; record: string } {
  return { lease: keys.pageLease(job, page), record: keys.pageRecord(job, page) };
}

/** The page id of a page record's key (`ctl|page|<job>|<id>`). */
export function pageOfRecordKey(key: string): string {
  return key.slice(key.lastIndexOf('|') + 1);
}

/**
 * The runs of a started page as history entries, `running` (or their node died and recovery has
 * not taken the page yet): what an in-flight record shows for one run.
 */
export function runningOfPage(rec: PageRecord): HistoryEntry[] {
  const started = rec.started;
  if (!started) return [];
  return started.won.flatMap((i): HistoryEntry[] => {
    const item = rec.items[i];
    if (!item || item.kind !== 'run') return [];
    return [
      {
        ...occFields(itemOcc(rec.job, item)),
        scheduledAt: new Date(item.at ?? item.fireTime),
        node: rec.node,
        attempt: item.attempt ?? 1,
        token: started.token,
        source: item.source,
        status: 'running',
        startedAt: new Date(started.at),
      },
    ];
  });
}

/**
 * A page record as stored — written twice per page and compared whole by the finish's delete, so
 * every byte of an item costs three times (a 1,000-item page's record was ~130 KB): an item's
 * fields that say what most items say are left out — `fireTime` when it is the page's (`f`),
 * `kind` when `run`, `source` when `schedule` — and `to` is its next fire time alone (`n`) when
 * it is the plain due entry of that time. {@link decodePageRecord} puts them back, and reads a
 * record written whole (by an earlier version) as it is.
 */
export function encodePageRecord(rec: PageRecord, items = encodePageItems(rec.items)): string {
  // The items last: everything before them is what a poll's look at the record needs (peekPageRecord).
  const out: Record<string, unknown> = { job: rec.job, node: rec.node, leaseMs: rec.leaseMs };
  const f = rec.items[0]?.fireTime;
  if (f !== undefined) out['f'] = f;
  if (rec.started !== undefined) out['started'] = rec.started;
  return `${JSON.stringify(out).slice(0, -1)},"items":${items}}`;
}

/**
 * The `items` of {@link encodePageRecord}, as JSON: given to it again for the page's start write
 * when the items did not change since the claim's (one encoding per page, not two).
 */
export function encodePageItems(items: readonly PageItem[]): string {
  const f = items[0]?.fireTime;
  return JSON.stringify(
    items.map((it) => {
      const out: Record<string, unknown> = { id: it.id, v: it.v };
      if (it.fireTime !== f) out['fireTime'] = it.fireTime;
      if (it.at !== undefined) out['at'] = it.at;
      const next = plainDueFireTime(it.to, it.id, it.v);
      if (next === undefined) out['to'] = it.to;
      else out['n'] = next;
      if (it.kind !== 'run') out['kind'] = it.kind;
      if (it.source !== 'schedule') out['source'] = it.source;
      if (it.attempt !== undefined) out['attempt'] = it.attempt;
      if (it.by !== undefined) out['by'] = it.by;
      if (it.reason !== undefined) out['reason'] = it.reason;
      return out;
    }),
  );
}

/** What a look at a page record needs before taking it over: all of it but its items. */
export type PageHeader = Omit<PageRecord, 'items'>;

/**
 * A page record's fields before its items, parsed without its items (a 1,000-item record is
 * ~60 KB; each node's poll looks at every page of the fleet once per version of its record).
 * Written by {@link encodePageRecord}, the items come last; a JSON string cannot hold the raw
 * text `,"items":[` (its quotes would be escaped), so the first one is the field's. A record
 * written whole by an earlier version (items before `started`) reads as not started: the look
 * then asks the page's lease, as it does for a page that has not started.
 */
export function peekPageRecord(value: string): PageHeader {
  const i = value.indexOf(',"items":[');
  if (i < 0) {
    const { items: _, ...header } = decodePageRecord(value);
    return header;
  }
  const header = JSON.parse(`${value.slice(0, i)}}`) as PageHeader & { f?: number };
  delete header.f;
  return header;
}

/** A page record as written by {@link encodePageRecord} (or whole, by an earlier version). */
export function decodePageRecord(value: string): PageRecord {
  const raw = JSON.parse(value) as PageRecord & { f?: number };
  const f = raw.f;
  for (const it of raw.items as (PageItem & { n?: number })[]) {
    if (it.fireTime === undefined && f !== undefined) it.fireTime = f;
    if (it.to === undefined && it.n !== undefined) it.to = keys.dueEntry(it.n, it.id, it.v);
    delete it.n;
    it.kind ??= 'run';
    it.source ??= 'schedule';
  }
  delete raw.f;
  return raw;
}

/**
 * {@link encodeDueValue} of every run item's move of one page — `{ job, page, prev: { page,
 * fireTime } }`, the value nearly every move of a fan-out writes — as a function of the fire time:
 * the same text, with the job and page encoded once per page instead of an object, a spread and a
 * `JSON.stringify` per item.
 */
export function runMoveValue(job: string, page: string): (fireTime: number) => string {
  const head = `{"job":${JSON.stringify(job)},"page":${JSON.stringify(page)},"prev":{"fireTime":`;
  return (fireTime) => `${head}${fireTime}}}`;
}

/** A due entry's value as stored: `prev.page` is left out when it is `page` (as it is after every run). */
export function encodeDueValue(value: DueValue): string {
  const prev = value.prev;
  if (prev === undefined || prev.page !== value.page) return JSON.stringify(value);
  return JSON.stringify({ ...value, prev: { fireTime: prev.fireTime } });
}

/** A sharded stored schedule's entry: the fire times whose shards after shard 0 it offers again (due/pending-shards.ts). */
interface ShardMemory {
  pending?: { fireTime: number; at: number };
  pendingBefore?: { fireTime: number; at: number }[];
}

/** A due entry's value read back (written by {@link encodeDueValue}, or whole); `pending`: a sharded entry's (due-entry.ts). */
export function decodeDueValue(value: string): DueValue & ShardMemory {
  const raw = JSON.parse(value) as DueValue & ShardMemory;
  if (raw.prev !== undefined && raw.prev.page === undefined && raw.page !== undefined)
    raw.prev = { page: raw.page, fireTime: raw.prev.fireTime };
  return raw;
}
