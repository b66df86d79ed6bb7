import type { Lock, TryLockOptions } from '../lock/types.js';

/**
 * The Store contract: the small SPI every backend implements. A backend knows nothing about jobs;
 * everything above it (locks, the scheduler) is built on these calls.
 *
 * Time: every `*At`/`now` value is **store time** in epoch milliseconds, read from the store's own
 * clock (database server, Redis `TIME`, the host clock for SQLite and memory). Callers never mix it
 * with their local `Date.now()`.
 */

/** One key to lease in an {@link Store.acquire} batch. */
export interface LeaseRequest {
  /**
   * 1..512 characters, stored as data (quotes, backslashes, emoji: any well-formed Unicode text
   * but NUL, as for every key and record value).
   */
  key: string;
  /** Who holds it; free text up to 255 characters, shown by `oncely locks`. */
  owner: string;
  /** Lease length in ms (> 0). The lease ends at `acquiredAt + leaseMs` on the store clock. */
  leaseMs: number;
}

/** A granted lease. */
export interface Lease {
  /** The leased key. */
  key: string;
  /** Who holds it, as given in the {@link LeaseRequest}. */
  owner: string;
  /**
   * Fencing token: strictly greater than every token ever granted for this key before, even after
   * the key's row was swept. (All shipped backends draw it from one store-wide counter, so tokens
   * also increase across keys; callers may only rely on the per-key order.)
   */
  token: number;
  /** Store time at which the lease was granted. */
  acquiredAt: number;
  /** Store time at which it ends unless extended. */
  expiresAt: number;
}

/** A record in the ordered key/value space. */
export interface StoredRecord {
  /** Its key. */
  key: string;
  /** Its value, as written. */
  value: string;
  /** Store time after which the record no longer exists; `null` = never expires. */
  expiresAt: number | null;
}

/** Options of {@link Store.put}. */
export interface PutOptions {
  /** Time to live in ms from now (store clock); omit for a record that never expires. */
  ttlMs?: number;
}

/**
 * One write in an {@link Store.apply} batch; each behaves exactly like the single-op method of the
 * same name (and is validated the same way).
 *
 * @example
 * // Consume the queued run as read; a newer one queued meanwhile stays for the next reader.
 * const [consumed] = await store.apply([{ op: 'delete', key, ifValue: valueAsRead }]);
 */
export type WriteOp =
  /** Like {@link Store.put}: creates or replaces a record (`ttlMs` omitted = never expires). Result: `true`. */
  | {
      /** Which write. */
      op: 'put';
      /** The record's key. */
      key: string;
      /** Its new value. */
      value: string;
      /** Time to live in ms from now (store clock); omit for a record that never expires. */
      ttlMs?: number;
    }
  /**
   * Like {@link Store.delete}. Result: whether the record existed and had not expired (and was
   * deleted). With `ifValue`, a compare-and-delete: the record is deleted only if it is live and
   * its value is exactly `ifValue` (code unit for code unit: no trimming, case folding or
   * normalisation); otherwise it is left as it is and the result is `false`. Like a `release` by
   * a stale token, a `false` here fails nothing: the batch's other ops are applied all the same.
   * For consuming a record that others may replace meanwhile: a replacement written after the
   * read survives.
   */
  | {
      /** Which write. */
      op: 'delete';
      /** The record's key. */
      key: string;
      /** Delete only if the live record holds exactly this value. */
      ifValue?: string;
    }
  /** Like {@link Store.release}, fencing and `holdUntil` included. Result: whether `token` still held the lease. */
  | {
      /** Which write. */
      op: 'release';
      /** The leased key. */
      key: string;
      /** The fencing token the release acts for: only the holder's token releases. */
      token: number;
      /** Store time until which the key stays unavailable (omit: free at once). */
      holdUntil?: number;
    };

/**
 * One write of a {@link Store.claimPage} batch: applied only if the page's lease is granted.
 * Every key (`key`, `from`, `to`) appears at most once in a batch.
 */
export type PageOp =
  /** Creates or replaces a record (like {@link Store.put}). Result: `true`. */
  | {
      /** Which write. */
      op: 'put';
      /** The record's key. */
      key: string;
      /** Its new value. */
      value: string;
      /** Time to live in ms from the claim's store instant; omit for a record that never expires. */
      ttlMs?: number;
    }
  /**
   * Put-if-absent: creates the record only if no live record has the key (absent, or expired on
   * the store clock). Result: whether it was created; a live record is left exactly as it was.
   * Two batches racing for one key: exactly one creates it.
   */
  | {
      /** Which write. */
      op: 'create';
      /** The record's key. */
      key: string;
      /** Its value, if it is created. */
      value: string;
      /** Time to live in ms from the claim's store instant; omit for a record that never expires. */
      ttlMs?: number;
    }
  /**
   * Compare-and-move: if a live record has the key `from`, it is deleted and `to` is written with
   * `value` (replacing whatever `to` held, live or expired); otherwise nothing is written, neither
   * `from` nor `to`. Result: whether it moved. Two batches racing to move one `from`: exactly one
   * moves it. (A due-index entry moved to its next due time is claimed by the move itself.)
   */
  | {
      /** Which write. */
      op: 'move';
      /** The record to move (it must be live). */
      from: string;
      /** Where it goes. */
      to: string;
      /** The moved record's new value. */
      value: string;
      /** Time to live in ms from the claim's store instant; omit for a record that never expires. */
      ttlMs?: number;
    };

/** What {@link Store.claimPage} answers. */
export interface PageClaim {
  /** The page's lease, or `null` when its key is held (then nothing of the batch was applied). */
  lease: Lease | null;
  /** One result per op, in order (all `false` when the lease was not granted). */
  results: boolean[];
}

/** Options of {@link Store.scan}. */
export interface ScanOptions {
  /** At most this many records (default 100, at most 10,000). */
  limit?: number;
  /** Descending key order instead of ascending. */
  reverse?: boolean;
  /** Cursor: only keys strictly after this one in the scan's direction (pass the last key seen). */
  after?: string;
}

/** Options of {@link Store.listLeases}. */
export interface ListLeasesOptions {
  /** Only keys starting with this prefix. */
  prefix?: string;
  /** At most this many (default 100, at most 10,000). */
  limit?: number;
}

/** Options of {@link Store.sweep}. */
export interface SweepOptions {
  /** At most this many expired leases and at most this many expired records are deleted (default 1000). */
  limit?: number;
}

/** What {@link Store.sweep} deleted. */
export interface SweepResult {
  /** Expired leases deleted. */
  leases: number;
  /** Expired records deleted. */
  records: number;
}

/** What a store guarantees, as data; callers read this instead of checking classes. */
export interface StoreCapabilities {
  /** Tokens strictly increase per key even after cleanup. */
  fencing: boolean;
  /** Where data lives: `memory` (lost with the process), `disk` (one host), `server` (a database server; its own replication/persistence settings apply). */
  durability: 'memory' | 'disk' | 'server';
  /** `now()` reads a clock owned by the store rather than the caller's process. */
  serverTime: boolean;
  /** Several processes may share the store safely. */
  multiProcess: boolean;
  /** Several hosts may share the store safely. */
  multiHost: boolean;
  /** `acquire` grants a whole batch in one round trip. */
  batchAcquire: boolean;
  /**
   * `apply` sends a whole batch in one round trip and applies it atomically (all or nothing).
   * `false` for a store that inherits `BaseStore`'s op-by-op default `doApply`.
   */
  batchApply: boolean;
  /**
   * `getMany` reads its whole batch in one round trip, at one store instant. `false` for a store
   * that inherits `BaseStore`'s default `doGetMany` (one `get` per distinct key, in parallel).
   */
  batchGet: boolean;
  /**
   * `count` is answered by the store in one round trip, at one store instant. `false` for a store
   * that inherits `BaseStore`'s default `doCount` (pages through `scan`: exact for records that do
   * not change meanwhile, one round trip per 10,000 records).
   */
  serverCount: boolean;
  /**
   * `claimPage` is offered: a lease and a batch of puts, put-if-absent creates and
   * compare-and-moves, applied together in one round trip, atomically, and only if the lease is
   * granted; its token is greater than every token the store granted before, for any key. `false`
   * (the default) for a store without it: `claimPage` is then refused, and the scheduler claims
   * occurrence by occurrence.
   */
  pages: boolean;
}

/**
 * A store: leases with fencing tokens and an ordered key/value space with expiry, on one backend.
 * Open one with `openStore(url)` (or a backend's class); the scheduler, `withLock` and `once()`
 * take it. Every mutating lease call takes the fencing token it acts for. `await using` closes it.
 * Third-party backends extend {@link BaseStore} and certify themselves with `describeStore`
 * (`oncely/testing`).
 *
 * @example
 * await using store = await openStore('redis://localhost:6379');
 * const [lease] = await store.acquire([{ key: 'report', owner: 'web-1', leaseMs: 30_000 }]);
 * if (lease) await store.release(lease.key, lease.token);
 */
export interface Store extends AsyncDisposable {
  /** Backend name: `memory`, `sqlite`, `postgres`, `mysql`, `redis`, … */
  readonly kind: string;
  /** What this store guarantees (see {@link StoreCapabilities}). */
  readonly capabilities: StoreCapabilities;

  /** The store clock, epoch ms. */
  now(): Promise<number>;

  /**
   * Leases every key that is free or whose lease has expired, in **one round trip** for the whole
   * batch. Returns one entry per request, in order: the lease, or `null` if the key is held. A key
   * repeated in a batch is granted at most once (later repeats get `null`).
   */
  acquire(requests: readonly LeaseRequest[]): Promise<(Lease | null)[]>;

  /**
   * Extends a lease if `token` still holds it and it has not expired: `expiresAt` becomes
   * `max(expiresAt, now + leaseMs)`, and that is returned; `null` when the lease is gone (expired,
   * released without a hold, or taken over). An extend **never shortens** a lease: a release with `holdUntil`
   * (lockAtLeastFor, a "done" marker) leaves the lease live under the same token, and an extend
   * sent before that release but applied after it (a lost reply, another pooled connection) must
   * not cut the hold short — a late node would then take the key and run the fire time again.
   */
  extend(key: string, token: number, leaseMs: number): Promise<number | null>;

  /**
   * Gives a lease up if `token` still holds it and it has not expired. With `holdUntil` (store time)
   * in the future the key stays unavailable until then (lockAtLeastFor, "done" markers); otherwise it
   * is free at once. Returns `false` when the lease was already gone.
   */
  release(key: string, token: number, holdUntil?: number): Promise<boolean>;

  /** The current holder of `key`, or `null` if it is free (expired leases count as free). */
  inspect(key: string): Promise<Lease | null>;

  /** Unexpired leases, ascending by key. */
  listLeases(options?: ListLeasesOptions): Promise<Lease[]>;

  /**
   * Creates or replaces a record. Keys and values are well-formed Unicode text without NUL
   * (U+0000) on every backend (PostgreSQL text cannot hold one); anything else is
   * `INVALID_ARGUMENT`.
   */
  put(key: string, value: string, options?: PutOptions): Promise<void>;
  /** The record's value, or `null` if absent or expired. */
  get(key: string): Promise<string | null>;
  /**
   * The values of up to 1,000 records in **one round trip** (see `capabilities.batchGet`): one
   * result per key, in order, `null` when the record is absent or expired on the store clock. A
   * key repeated in the batch gets the same answer each time. Keys are validated like `get`'s;
   * more than 1,000 keys, or anything but an array, is `INVALID_ARGUMENT`; `[]` resolves `[]`
   * without a round trip.
   *
   * @example
   * // The stored schedules behind the ids a due index returned, in one call.
   * const values = await store.getMany(dueIds.map((id) => `schedule/${id}`));
   * const schedules = values.flatMap((v) => (v === null ? [] : [JSON.parse(v)]));
   */
  getMany(keys: readonly string[]): Promise<(string | null)[]>;
  /** Unexpired records whose key starts with `prefix`, ordered by key (code point order). */
  scan(prefix: string, options?: ScanOptions): Promise<StoredRecord[]>;
  /**
   * How many unexpired records have a key starting with `prefix` (`''` = all records), exactly,
   * judged on the store clock: the same records a `scan` of `prefix` would page through (`%`, `_`
   * and backslashes are literal). One round trip on every shipped backend (see
   * `capabilities.serverCount`); meant for operator views and checks, not for a hot path (its
   * cost grows with the records it counts on the SQL backends). The prefix must be well-formed
   * Unicode text without NUL (`INVALID_ARGUMENT` otherwise).
   *
   * @example
   * const stored = await store.count('schedule/');   // every stored schedule
   * const total = await store.count('');              // every live record
   */
  count(prefix: string): Promise<number>;
  /** Deletes a record; returns whether it existed (and had not expired). */
  delete(key: string): Promise<boolean>;

  /**
   * Applies a batch of record writes and lease releases in order, as if each were called alone (a
   * key may repeat; later ops see earlier ones' effects), in **one round trip** and atomically (all
   * or nothing) on every shipped backend — see `capabilities.batchApply`. Returns one result per
   * op, in order: `put` → `true`; `delete` → whether the record existed (unexpired; with
   * `ifValue`, and held exactly that value) and was deleted; `release` → whether the lease was still
   * held by `token`. A `false` result is an answer, not a failure: it never undoes the batch. Every op is validated before anything is sent
   * (one bad op → `INVALID_ARGUMENT`, nothing applied); at most 1,000 ops; `[]` resolves `[]`
   * without a round trip.
   *
   * @example
   * // Finish a run: record it, drop the in-flight marker, release its occurrence (held until the
   * // fire time has passed) and its overlap gate, in one call.
   * const [, wasRunning, releasedOccurrence, releasedGate] = await store.apply([
   *   { op: 'put', key: `history/${job}/${at}`, value: JSON.stringify(entry), ttlMs: 7 * 86_400_000 },
   *   { op: 'delete', key: `running/${job}/${at}` },
   *   { op: 'release', key: occurrence.key, token: occurrence.token, holdUntil: at + 60_000 },
   *   { op: 'release', key: gate.key, token: gate.token },
   * ]);
   */
  apply(ops: readonly WriteOp[]): Promise<boolean[]>;

  /**
   * Claims a page of work under one lease (see `capabilities.pages`): acquires `lease` as
   * {@link Store.acquire} would and, only if it is granted, applies `ops` in order — all in **one
   * round trip**, all or nothing, on one store instant. The grant's token is greater than every
   * token this store granted before (for any key), so a later claim of the same work always holds
   * a higher token. At most 1,000 ops; every key at most once in a batch; ops are validated like
   * `apply`'s before anything is sent (`INVALID_ARGUMENT`). A store without the capability refuses
   * it with `INVALID_ARGUMENT`.
   *
   * @example
   * // Claim two due entries (moved to their next due time) and record the page, under one lease.
   * const { lease, results } = await store.claimPage({ key: 'page/n1/7f3a', owner: 'n1', leaseMs: 30_000 }, [
   *   { op: 'move', from: 'due/0900/a', to: 'due/0930/a', value: '{"page":"7f3a"}' },
   *   { op: 'move', from: 'due/0900/b', to: 'due/0930/b', value: '{"page":"7f3a"}' },
   *   { op: 'put', key: 'page-record/7f3a', value: '["a","b"]' },
   * ]);
   * // results[i] === true: this page holds entry i (no other claim moved it).
   */
  claimPage(lease: LeaseRequest, ops: readonly PageOp[]): Promise<PageClaim>;

  /** Deletes expired leases and records, in bounded batches; returns how many of each went. */
  sweep(options?: SweepOptions): Promise<SweepResult>;

  /** Creates the schema if missing; safe to call concurrently from many processes. */
  migrate(): Promise<void>;
  /** Releases connections the store opened itself (never a client/pool the caller passed in). */
  close(): Promise<void>;

  /**
   * A ShedLock-style lock: `null` when the name is held (by anyone, including this owner: not
   * reentrant).
   *
   * @example
   * await using lock = await store.tryLock({ name: 'report', lockAtMostFor: '5m' });
   * if (lock) await sendReport(lock.token);
   */
  tryLock(options: TryLockOptions): Promise<Lock | null>;
}
