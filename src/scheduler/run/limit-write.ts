import type { Clock, StoreClock } from '../../core/clock.js';
import type { Store } from '../../store/types.js';
import { esc } from '../keys.js';
import type { Local } from './limit-local.js';
import type { LimitRecord } from './limit-record.js';
import { giveBack } from './limit-record.js';

/** Tries of one compare-and-move before a write gives up for this tick (a reservation grants nothing). */
const MAX_TRIES = 4;
/**
 * How long the lease under which a job's first limit record is created is held (`limnew|<job>`),
 * so that no node creates it a second time: a node that found no record and was about to create
 * one, and another that had read the first record and was about to move it, act within a round
 * trip or a stall, far less than this. (The records are never deleted, so a later create only
 * follows a manual wipe of `lim|` records: it waits for this lease, the job's reservations
 * granting nothing meanwhile.)
 */
const CREATE_LEASE_MS = 10 * 60_000;

/** What a node writes its limit records with (fleet-limits.ts). */
export interface LimitWriter {
  store: Store;
  node: string;
  clock: Clock;
  storeClock: StoreClock;
  random: () => number;
  onError: (err: unknown, during: string) => void;
}

/**
 * One compare-and-move of the job's record: `update` says what this node's entry becomes
 * (reading the record as it is) and how many starts it granted; retried on a lost race.
 * Returns whether it was stored (or needed no write).
 */
export async function writeLimit(
  w: LimitWriter,
  l: Local,
  update: (rec: LimitRecord, now: number) => { count: number; granted: number },
): Promise<boolean> {
  const prefix = `lim|${esc(l.spec.name)}|`;
  const leaseMs = l.spec.lockAtMostForMs;
  try {
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const [cur] = await w.store.scan(prefix, { limit: 1, reverse: true });
      const now = w.storeClock.estimate();
      const rec: LimitRecord = cur ? (JSON.parse(cur.value) as LimitRecord) : { n: {} };
      const unused = l.unused;
      giveBack(rec, unused);
      l.line = rec.w && { ...rec.w };
      // This node's place in line as it is now (the grant below reads it: see reserveIn).
      const place = l.place.into(rec, w.node, now);
      const { count, granted } = update(rec, now);
      // Nothing to store — this node's entry and place in line are as they should be and count
      // long enough, no start granted or given back — costs no write: a node waiting for
      // permits reads only, but to move or hold its place.
      const entry = rec.n[w.node];
      const same = count === 0 ? entry === undefined : entry?.[0] === count && entry[1] - now >= leaseMs / 2;
      if (same && place.same && unused.length === 0 && granted === 0) {
        l.stored = count;
        l.storedUntil = entry?.[1] ?? 0;
        place.stored(false);
        return true;
      }
      const until = now + leaseMs;
      if (count > 0) rec.n[w.node] = [count, until];
      else delete rec.n[w.node];
      const seq = cur ? Number(cur.key.slice(prefix.length)) + 1 : 0;
      const to = prefix + String(seq).padStart(15, '0');
      // The first record is created empty-handed and then moved like any other. A move
      // replaces whatever its `to` holds, so the chain is sound only if each key is written
      // once: the first one is created under one lease the whole fleet shares, held for
      // CREATE_LEASE_MS (see there). Otherwise (each node its own 1 ms lease, as for a move)
      // a node whose scan found nothing created it again after another had created and moved
      // it on, and a node that had read the first one moved the second onto the fleet's
      // record: its permits lost, a second node granted them (simulator, stalls and latency
      // only, seed 237: 4 runs at once under maxConcurrency 2; CI saw the same on PostgreSQL
      // and MariaDB, three nodes reserving a new job's first permits at once).
      const op = cur
        ? { op: 'move' as const, from: cur.key, to, value: JSON.stringify(rec) }
        : { op: 'create' as const, key: to, value: JSON.stringify({ n: {} }) };
      // The lease only carries the batch (a move: each node its own, for 1 ms; the move decides).
      const lease = cur
        ? { key: `limcas|${esc(l.spec.name)}|${esc(w.node)}`, owner: w.node, leaseMs: 1 }
        : { key: `limnew|${esc(l.spec.name)}`, owner: w.node, leaseMs: CREATE_LEASE_MS };
      const claim = await w.store.claimPage(lease, [op]);
      if (cur && claim.lease && claim.results[0] === true) {
        // Taken out now; any added meanwhile (an await above) wait for the next write.
        l.unused = l.unused.filter((u) => !unused.includes(u));
        l.stored = count;
        l.storedUntil = until;
        place.stored(true);
        return true;
      }
      // Lost the race (or only created the record): read again, after a short random wait when lost.
      if (cur || !claim.lease) await w.clock.sleep(1 + Math.floor(w.random() * 4 * (tries + 1)));
    }
  } catch (err) {
    w.onError(err, `the fleet limits of ${l.spec.name}`);
  }
  return false;
}
