/**
 * What the lock bench measures on one backend: oncely's store and the floors, each as a
 * {@link Subject} (a row of the report), opened on one server. Two kinds of rows:
 *
 * - the main rows, at concurrency 1 and 32, every worker on a name of its own, oncely and the
 *   floors on pools of the same size;
 * - the rows measured the way an independent benchmark measured oncely: sequential (c=1 only),
 *   50 names in rotation, oncely exactly as `openStore(url)` builds it, against the hand-written
 *   lock on a single connection.
 */
import type { Store } from '../src/store/types.js';
import { memoryFloor } from './floors/memory.js';
import { mysqlFloor } from './floors/mysql.js';
import { postgresFloor } from './floors/postgres.js';
import { redisFloor } from './floors/redis.js';
import { redlockCompetitor } from './floors/redlock.js';
import { sqliteFloor } from './floors/sqlite.js';
import { FLOOR_TABLE, type Floor, SEQUENTIAL_FLOOR_TABLE } from './floors/types.js';
import type { Op } from './measure.js';
import { OPEN_STORE_DEFAULTS, openDefaults, openOncely } from './oncely.js';
import { type RowResult, unavailableRow } from './report.js';
import type { BackendName } from './servers.js';
import { reason } from './servers.js';

export const CONCURRENCY = 32;
/** Connections per pool for the SQL servers, for oncely and for each floor alike (main rows). */
export const POOL_SIZE = 32;
/** Names the sequential rows rotate through, one per op. */
export const ROTATION = 50;

export const LABEL = {
  oncely: 'oncely',
  floorLock: 'floor: hand-written lock',
  roundTrip: 'floor: driver round trip',
  redlock: 'redlock (@sesamecare-oss/redlock)',
  defaults: `oncely via openStore(url) defaults, sequential, ${ROTATION} names`,
  floorSequential: `floor: hand-written lock, 1 connection, sequential, ${ROTATION} names`,
} as const;

/** Everything measured for one row. */
export interface Subject {
  label: string;
  /** One uncontended cycle; worker `w` works on its own name (or the next name of the rotation). */
  op: Op;
  /** Every worker on one name (for the contended note); only for the main lock rows. */
  contended?: Op;
  /** The floor this row's ratio divides by. */
  baseline: string;
  /** Measured at concurrency 1 only (the independent benchmark's way). */
  sequential: boolean;
  failed?: string;
  latencies: number[];
  rate1: number[];
  rate32: number[];
  /** CPU µs per op at c=32, per round: this process, and the server (when it is our child). */
  nodeCpu32: number[];
  serverCpu32: number[];
  requestsPerOp: number;
}

export function subject(
  label: string,
  op: Op,
  options: { contended?: Op; baseline?: string; sequential?: boolean } = {},
): Subject {
  return {
    label,
    op,
    ...(options.contended ? { contended: options.contended } : {}),
    baseline: options.baseline ?? LABEL.floorLock,
    sequential: options.sequential ?? false,
    latencies: [],
    rate1: [],
    rate32: [],
    nodeCpu32: [],
    serverCpu32: [],
    requestsPerOp: Number.NaN,
  };
}

const WORKER_NAMES = Array.from({ length: CONCURRENCY }, (_, w) => `bench-w${w}`);
const ROTATION_NAMES = Array.from({ length: ROTATION }, (_, i) => `bench-r${i}`);
const CONTENDED_NAME = 'bench-contended';

function oncelyCycle(store: Store, name: (w: number) => string): Op {
  return async (w) => {
    const lock = await store.tryLock({ name: name(w), lockAtMostFor: '30s' });
    if (!lock) return false;
    if (!(await lock.release())) throw new Error('lock.release() returned false for a lock just taken');
    return true;
  };
}

/** The next of the {@link ROTATION} names on every call (the op is only run sequentially). */
function rotation(): (w: number) => string {
  let next = 0;
  return () => ROTATION_NAMES[next++ % ROTATION]!;
}

async function makeFloor(backend: BackendName, url: string, poolSize: number, table: string): Promise<Floor> {
  switch (backend) {
    case 'memory':
      return memoryFloor();
    case 'sqlite':
      return sqliteFloor({
        file: url.slice('sqlite:'.length),
        table,
        // the PRAGMAs SqliteStore sets on a file it opens
        pragmas: ['busy_timeout = 10000', 'journal_mode = WAL', 'synchronous = NORMAL'],
      });
    case 'postgres':
      return postgresFloor({ url, poolSize, table });
    case 'mysql':
      return mysqlFloor({ url, poolSize, table });
    case 'redis':
      return redisFloor({ url, poolSize: 1, table });
  }
}

/** Backends where oncely's main rows already run on what `openStore(url)` builds, on one connection. */
const SINGLE_CONNECTION: readonly BackendName[] = ['memory', 'sqlite', 'redis'];

export interface Opened {
  subjects: Subject[];
  /** Rows that could not be opened. */
  missing: RowResult[];
  closers: (() => Promise<unknown>)[];
  /** Whether oncely's store was opened (its prefixed objects must be dropped). */
  oncelyOpened: boolean;
  floorVersion: string | undefined;
  poolSize: number;
  poolNote: string;
  /** How the sequential rows are set up, for the report. */
  sequentialNote: string;
}

/** Opens every row of `backend` on `url`; never throws (what fails is a missing row). */
export async function openSubjects(backend: BackendName, url: string, prefix: string): Promise<Opened> {
  const opened: Opened = {
    subjects: [],
    missing: [],
    closers: [],
    oncelyOpened: false,
    floorVersion: undefined,
    poolSize: POOL_SIZE,
    poolNote: '',
    sequentialNote: '',
  };
  const { subjects, missing, closers } = opened;
  const single = SINGLE_CONNECTION.includes(backend);
  let oncelyStore: Store | undefined;
  // oncely first: its pool size decides the floors' pool size.
  try {
    const oncely = await openOncely(backend, url, prefix, POOL_SIZE);
    closers.push(() => oncely.close());
    opened.oncelyOpened = true;
    opened.poolSize = oncely.poolSize ?? POOL_SIZE;
    opened.poolNote = oncely.poolNote;
    oncelyStore = oncely.store;
    subjects.push(
      subject(
        LABEL.oncely,
        oncelyCycle(oncely.store, (w) => WORKER_NAMES[w]!),
        { contended: oncelyCycle(oncely.store, () => CONTENDED_NAME) },
      ),
    );
  } catch (err) {
    missing.push(unavailableRow(LABEL.oncely, `unavailable: ${reason(err)}`));
  }
  let floor: Floor | undefined;
  try {
    floor = await makeFloor(backend, url, opened.poolSize, FLOOR_TABLE);
    const f = floor;
    opened.floorVersion = f.version;
    closers.push(() => f.close());
    subjects.push(
      subject(LABEL.floorLock, (w) => f.lock(WORKER_NAMES[w]!), { contended: () => f.lock(CONTENDED_NAME) }),
    );
    const roundTrip = f.roundTrip;
    if (roundTrip) {
      subjects.push(
        subject(LABEL.roundTrip, async () => {
          await roundTrip();
          return true;
        }),
      );
    } else {
      missing.push(unavailableRow(LABEL.roundTrip, 'n/a: in-process, no driver'));
    }
  } catch (err) {
    missing.push(
      unavailableRow(LABEL.floorLock, `unavailable: ${reason(err)}`),
      unavailableRow(LABEL.roundTrip, `unavailable: ${reason(err)}`),
    );
  }
  if (backend === 'redis') {
    try {
      const redlock = await redlockCompetitor(url);
      closers.push(() => redlock.close());
      subjects.push(subject(LABEL.redlock, (w) => redlock.lock(WORKER_NAMES[w]!)));
    } catch (err) {
      missing.push(unavailableRow(LABEL.redlock, `unavailable: ${reason(err)}`));
    }
  }

  // The independent benchmark's way: sequential, 50 names in rotation, openStore(url) as it is.
  const sequential = { baseline: LABEL.floorSequential, sequential: true };
  try {
    let store = single ? oncelyStore : undefined;
    if (!store) {
      const defaults = await openDefaults(url, prefix);
      closers.push(() => defaults.close());
      opened.oncelyOpened = true;
      store = defaults.store;
    }
    subjects.push(subject(LABEL.defaults, oncelyCycle(store, rotation()), sequential));
  } catch (err) {
    missing.push(unavailableRow(LABEL.defaults, `unavailable: ${reason(err)}`));
  }
  try {
    let f = single ? floor : undefined;
    if (!f) {
      const own = await makeFloor(backend, url, 1, SEQUENTIAL_FLOOR_TABLE);
      closers.push(() => own.close());
      f = own;
    }
    const next = rotation();
    const one = f;
    subjects.push(subject(LABEL.floorSequential, (w) => one.lock(next(w)), sequential));
  } catch (err) {
    missing.push(unavailableRow(LABEL.floorSequential, `unavailable: ${reason(err)}`));
  }
  opened.sequentialNote =
    backend === 'memory'
      ? ''
      : `the two sequential rows: oncely on what \`openStore(url)\` builds — ${OPEN_STORE_DEFAULTS[backend]}` +
        `${single ? ' (the same store as the main rows)' : ''} — and the hand-written lock on a single ` +
        `connection${single ? ' (the same floor as the main rows)' : ', a pool of 1 as the independent benchmark used'}`;
  return opened;
}
