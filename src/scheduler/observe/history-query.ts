import { invalidArgument } from '../../core/errors.js';
import { heapPop, heapPush } from '../../core/heap.js';
import { checkOptionNames } from '../../core/options.js';
import type { Store, StoredRecord } from '../../store/types.js';
import { compareKeys } from '../../store/validate.js';
import { decodePageRecord, runningOfPage } from '../claim/page-record.js';
import { decodeHistory, occFields } from '../finish/history.js';
import { validateJobName } from '../job-options.js';
import { jobOfKey, keys, timeKey } from '../keys.js';
import type { InflightRecord } from '../run/run.js';
import type { HistoryEntry } from '../types.js';

/**
 * One page of history across many jobs, read by an exact k-way merge instead of `jobs × limit`
 * records.
 *
 * Order (newest first): fire time descending, then history key descending (code point order, as
 * every store sorts keys). For one job that is the store's reverse key order
 * (`hist|<job>|<fireTime>|<schedule>|<shard>|<attempt>`: schedule, shard, then attempt
 * descending, so an occurrence's latest attempt comes first). Ties between
 * occurrences of one fire time are broken by key, not by attempt: a key-compatible order lets
 * every job be read as one sorted stream, so a page never has to read a whole fire time's worth
 * of records (100,000 stored schedules can share 09:00).
 *
 * Reads: each job's stream starts with a page of `max(10, ceil(2 × limit / jobs))` records (at
 * most `limit`) and fetches its next page (twice as large, at most what the answer still needs)
 * only when everything it had buffered was taken — so records read are O(limit + jobs × page),
 * not jobs × limit. In-flight records (attempts running now) merge in as one more stream.
 */

/** Where a page starts: older than a fire time (`Date`, epoch ms), or right after an entry ({@link historyCursor}). */
export type HistoryBefore = Date | number | string;

/** What `scheduler.history(query)` accepts; every field is optional. */
export interface HistoryQuery {
  /** Only this job's entries (default: every job recorded in the store). */
  job?: string;
  /** At most this many entries (default 100). */
  limit?: number;
  /** Where the page starts: see {@link HistoryBefore}. */
  before?: HistoryBefore;
}

/**
 * An opaque cursor for the position of `entry`: `history({ before: historyCursor(last) })` returns
 * the entries strictly after it, so consecutive pages are disjoint and miss nothing.
 *
 * @example
 * const page1 = await scheduler.history({ limit: 100 });
 * const page2 = await scheduler.history({ limit: 100, before: historyCursor(page1.at(-1)!) });
 */
export function historyCursor(entry: HistoryEntry): string {
  return encodeCursor(entryKey(entry));
}

/** Entries strictly after this position: `fireTime < fireTime`, or equal and `key < key`. */
interface Position {
  fireTime: number;
  key?: string;
}

/** `hist|<job>|<15-digit fire time>|<schedule>|<shard>|<4-digit attempt>`, parts escaped (keys.ts). */
const HISTORY_KEY = /^hist\|[^|]+\|(\d{15})\|[^|]*\|\d*\|\d{4}$/;
const MAX_FIRE_TIME = 10 ** 15 - 2;
const MAX_SCAN = 10_000;

function position(before: HistoryBefore | undefined): Position | undefined {
  if (before === undefined) return undefined;
  if (before instanceof Date || typeof before === 'number') {
    const ms = before instanceof Date ? before.getTime() : before;
    if (!Number.isSafeInteger(ms) || ms < 0 || ms > MAX_FIRE_TIME)
      throw invalidArgument(`history before must be a valid date or epoch ms from 0; got ${String(before)}`);
    return { fireTime: ms };
  }
  const key = typeof before === 'string' ? Buffer.from(before, 'base64url').toString('utf8') : '';
  const m = HISTORY_KEY.exec(key);
  // Re-encoding must give the same text: no padding, no stray characters the decoder skipped.
  if (!m || encodeCursor(key) !== before)
    throw invalidArgument(
      'history before must be a Date, epoch ms, or a cursor from historyCursor() (on the dashboard: the "older" link)',
    );
  return { fireTime: Number(m[1]), key };
}

function encodeCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

function entryKey(e: HistoryEntry): string {
  return keys.history(
    { job: e.job, scheduleId: e.scheduleId, fireTime: e.fireTime.getTime(), shard: e.shard },
    e.attempt,
  );
}

function fireTimeOfKey(key: string): number {
  return Number(key.split('|')[2]);
}

function isAfter(fireTime: number, key: string, pos: Position | undefined): boolean {
  if (pos === undefined) return true;
  return (
    fireTime < pos.fireTime ||
    (fireTime === pos.fireTime && pos.key !== undefined && compareKeys(key, pos.key) < 0)
  );
}

/** Where job `job`'s reverse scan starts so that it yields exactly the keys after `pos`. */
function startAfter(job: string, pos: Position | undefined): string | undefined {
  if (pos === undefined) return undefined;
  const prefix = keys.historyPrefix(job);
  if (pos.key === undefined) return prefix + timeKey(pos.fireTime);
  if (pos.key.startsWith(prefix)) return pos.key;
  // Another job's key: every key of this job compares the same way with it (they differ inside
  // the prefix), so this job's records at the cursor's fire time are either all after it or none.
  return prefix + timeKey(compareKeys(prefix, pos.key) < 0 ? pos.fireTime + 1 : pos.fireTime);
}

/** A candidate for the answer: a finished attempt's record, or an attempt running now. */
interface Item {
  key: string;
  fireTime: number;
  /** Finished records win over a running entry with the same key (the run just ended). */
  running: boolean;
  entry: () => HistoryEntry;
}

/** Negative when `a` comes first (newer). */
function compareItems(a: Item, b: Item): number {
  if (a.fireTime !== b.fireTime) return b.fireTime - a.fireTime;
  if (a.key !== b.key) return -compareKeys(a.key, b.key);
  return Number(a.running) - Number(b.running);
}

/** A sorted source of items, newest first. */
interface Source {
  head(): Item | undefined;
  /** Drops the head; refills from the store when the buffer ran dry and `want` > 0. */
  advance(want: number): Promise<void>;
}

/** One job's finished attempts, read newest first in growing pages. */
class JobStream implements Source {
  private buffer: StoredRecord[] = [];
  private index = 0;
  private exhausted = false;

  constructor(
    private readonly store: Store,
    private readonly prefix: string,
    private after: string | undefined,
    private pageSize: number,
  ) {}

  async fill(): Promise<void> {
    const records = await this.store.scan(this.prefix, {
      reverse: true,
      limit: this.pageSize,
      ...(this.after !== undefined && { after: this.after }),
    });
    // Every backend returns up to `limit` live records, so a short page is the end of the job.
    this.exhausted = records.length < this.pageSize;
    this.buffer = records;
    this.index = 0;
    const last = records.at(-1);
    if (last) this.after = last.key;
  }

  head(): Item | undefined {
    const r = this.buffer[this.index];
    if (!r) return undefined;
    return {
      key: r.key,
      fireTime: fireTimeOfKey(r.key),
      running: false,
      entry: () => decodeHistory(r.value, r.key),
    };
  }

  async advance(want: number): Promise<void> {
    this.index++;
    if (this.index < this.buffer.length || this.exhausted || want <= 0) return;
    this.pageSize = Math.min(Math.max(2 * this.pageSize, 10), want, MAX_SCAN);
    await this.fill();
  }
}

/** Items already in memory (the running attempts), sorted once. */
class ListSource implements Source {
  private index = 0;
  constructor(private readonly items: Item[]) {
    items.sort(compareItems);
  }
  head(): Item | undefined {
    return this.items[this.index];
  }
  async advance(): Promise<void> {
    this.index++;
  }
}

/** An in-flight record shown as a history entry: running (or its node died and recovery has not run yet). */
function runningEntry(rec: InflightRecord): HistoryEntry {
  return {
    ...occFields({ job: rec.job, scheduleId: rec.scheduleId, fireTime: rec.fireTime, shard: rec.shard }),
    scheduledAt: new Date(rec.scheduledAt ?? rec.fireTime),
    node: rec.node,
    attempt: rec.attempt,
    token: rec.token,
    source: rec.source,
    status: 'running',
    startedAt: new Date(rec.startedAt ?? rec.fireTime),
  };
}

/** A binary max-heap of sources by their heads (the newest head on top). */
class SourceHeap {
  private readonly items: Source[] = [];
  private readonly first = (a: Source, b: Source) => compareItems(a.head()!, b.head()!) < 0;

  get size(): number {
    return this.items.length;
  }

  push(s: Source): void {
    heapPush(this.items, s, this.first);
  }

  pop(): Source | undefined {
    return heapPop(this.items, this.first);
  }
}

/**
 * History newest first (see the order above): one record per finished attempt, plus the attempts
 * running now (from their in-flight records, status `running`), at most `limit`, strictly after
 * `before`. Without `job`, every job recorded in the store (`job|…`) is merged.
 */
export async function queryHistory(store: Store, query: HistoryQuery = {}): Promise<HistoryEntry[]> {
  checkOptionNames('history', query, ['job', 'limit', 'before']);
  if (query.job !== undefined) validateJobName(query.job);
  const limit = query.limit ?? 100;
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw invalidArgument(`history limit must be a whole number from 1; got ${String(query.limit)}`);
  const pos = position(query.before);
  const jobs =
    query.job !== undefined
      ? [query.job]
      : (await store.scan(keys.jobPrefix, { limit: MAX_SCAN })).map((r) => jobOfKey(r.key));
  const pageSize = Math.min(limit, MAX_SCAN, Math.max(10, Math.ceil((2 * limit) / Math.max(jobs.length, 1))));
  const streams = jobs.map(
    (job) => new JobStream(store, keys.historyPrefix(job), startAfter(job, pos), pageSize),
  );
  const [inflight, pages] = await Promise.all([
    store.scan(keys.inflightPrefix(query.job), { limit: MAX_SCAN }),
    store.scan(keys.pageRecordPrefix(query.job), { limit: MAX_SCAN }),
    ...streams.map((s) => s.fill()),
  ]);
  const entries = [
    ...inflight.map((r) => runningEntry(JSON.parse(r.value) as InflightRecord)),
    ...pages.flatMap((r) => runningOfPage(decodePageRecord(r.value))),
  ];
  const running = entries.flatMap((entry): Item[] => {
    const key = entryKey(entry);
    const fireTime = entry.fireTime.getTime();
    return isAfter(fireTime, key, pos) ? [{ key, fireTime, running: true, entry: () => entry }] : [];
  });

  const heap = new SourceHeap();
  for (const s of [...streams, new ListSource(running)]) if (s.head()) heap.push(s);
  const out: HistoryEntry[] = [];
  let lastKey: string | undefined;
  while (out.length < limit && heap.size > 0) {
    const source = heap.pop()!;
    const item = source.head()!;
    // A running entry right after the finished record of the same attempt is that record's stale twin.
    if (item.key !== lastKey) {
      out.push(item.entry());
      lastKey = item.key;
    }
    await source.advance(limit - out.length);
    if (source.head()) heap.push(source);
  }
  return out;
}
