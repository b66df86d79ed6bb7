import type { Store, StoredRecord } from '../../store/types.js';
import { latestPerRun, runHistoryKeys } from '../finish/history.js';
import type { GateKnowledge, Job } from '../internal-types.js';
import { esc, gateScope, keys, type OccurrenceId, unesc } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { firstCalledBy, runMarkKey } from '../run/invoked-mark.js';
import type { InflightRecord } from '../run/run-records.js';
import type { SkipCause } from '../types.js';
import { FINAL_STATUSES } from './dead-attempt.js';
import { decodePageRecord, type PageItem, type PageRecord } from './page-record.js';

/**
 * The one overlap rule between the two kinds of runs a stored schedule of a page-claimed job has
 * (overlap `skip`): its page runs, which take no gate (prev-run.ts judges a page run against the
 * page run before it), and its backfill runs, which take the schedule's gate and write an
 * in-flight record (backfill-claim.ts). Neither may start while the other goes; judged from
 * what each side writes FIRST and reads AFTER, so that of two racing sides at least one sees
 * the other:
 *
 * - A backfill run (B) holds the schedule's gate, then reads the job's page records: a page
 *   granted before B's gate that holds a run of the schedule without a final outcome (not started
 *   yet, going, or dead and waiting for its recovery) makes B wait a little, then give its claim
 *   back; the next poll offers it again (`pageRunGoing`). A page granted after B's gate is not
 *   waited for: it waits for B (below). B also starts no sooner than BACKFILL_SETTLE_MS after its
 *   node first saw its request.
 * - A page (A) writes its record (the claim), then, before its start record, looks at the
 *   schedules its knowledge says have backfill work — a request not yet consumed, or an
 *   in-flight record: every poll reads both (`ctl|`), and from a request's write until its run's
 *   end one of them is there. For those it reads the schedule's in-flight records and its gate
 *   (`judgeGated`): a backfill run that started at or before the fire time and is going makes the
 *   item a skip naming it; a run in flight otherwise (one that started after the fire time), or a
 *   gate taken at or before the page's grant (a claim that may not have seen the page's record),
 *   makes the item wait on this node until neither is there.
 * - The race left: A's knowledge predates B's request, and A's claim was applied after B's read
 *   of the page records. Then A's claim came at least BACKFILL_SETTLE_MS after B's node first
 *   saw the request, so after A's knowledge was read: A's knowledge is older than
 *   STALE_KNOWLEDGE_MS at its claim's answer, and A reads the job's requests and in-flight
 *   records again before judging (`readGateKnowledge`). The margin between the two covers the
 *   error of the nodes' estimates of the store clock.
 * Costs nothing while no backfill of the job is queued or running (knowledge is what the poll
 * read anyway), except a page whose claim was answered more than STALE_KNOWLEDGE_MS after its
 * node's last poll read: two scans of the job's control records, which the job's pages answered
 * within STALE_KNOWLEDGE_MS after share.
 */

/** A backfill run of a page-claimed stored schedule starts no sooner than this after its node first saw its request (store ms). */
export const BACKFILL_SETTLE_MS = 5_000;
/** A page claim answered when its node's knowledge (its last poll's read) is older than this reads it again. */
export const STALE_KNOWLEDGE_MS = BACKFILL_SETTLE_MS / 2;

/**
 * The value of a consumed backfill request's marker (backfill-claim.ts): its key kept, so that a
 * `backfill()` call racing the run queues nothing; it stands for no backfill work.
 */
export const CONSUMED = '{"consumed":true}';

const scheduleKey = (job: string, id: string) => `${job}\u0000${id}`;

/**
 * What a poll's `bf` (backfill requests) and `run` (in-flight) records say, read at `at`: from
 * their keys (`ctl|bf|<job>|<schedule>|…`, `ctl|run|<job>|<schedule>|…`), no value parsed — a
 * poll reads every in-flight record (1,000 jobs due together: 1,000 of them).
 */
export function gateKnowledge(
  bf: readonly StoredRecord[],
  run: readonly StoredRecord[],
  at: number,
): GateKnowledge {
  const schedules = new Set<string>();
  const add = (key: string) => {
    const parts = key.split('|', 4);
    const id = parts[3] === undefined || parts[3] === '' ? undefined : unesc(parts[3]);
    if (gateScope({ scheduleId: id }) !== undefined) schedules.add(scheduleKey(unesc(parts[2] ?? ''), id!));
  };
  for (const r of bf) if (r.value !== CONSUMED) add(r.key);
  for (const r of run) add(r.key);
  return { at, schedules };
}

/**
 * The job's backfill requests and in-flight records, read now (a page whose knowledge is stale),
 * or by a read begun within STALE_KNOWLEDGE_MS — for this job as good as a poll's read begun then
 * (the rule above needs only when knowledge was read: `at`, taken before the scans). Pages
 * answered long after the node's last poll (a slow store, a node stalled between its polls) each
 * read the job's control records afresh, two scans a page, though a tick's pages are answered
 * together. (bench:scale's fan-outs never took this path: their nodes polled often enough.)
 */
function readGateKnowledge(s: NodeState, job: string): Promise<GateKnowledge> {
  const now = s.storeClock.estimate();
  const last = s.jobGateKnowledge.get(job);
  if (last !== undefined && now - last.at <= STALE_KNOWLEDGE_MS) return last.read;
  const read = Promise.all([
    s.store.scan(`ctl|bf|${esc(job)}|`, { limit: 10_000 }),
    s.store.scan(keys.inflightPrefix(job), { limit: 10_000 }),
  ]).then(([bf, run]) => gateKnowledge(bf, run, now));
  const entry = { at: now, read };
  s.jobGateKnowledge.set(job, entry);
  // A read that failed is not kept (the page's claim fails as before; the next one reads again).
  read.catch(() => {
    if (s.jobGateKnowledge.get(job) === entry) s.jobGateKnowledge.delete(job);
  });
  return read;
}

/** What becomes of a page's run item of a schedule with backfill work: skipped naming a run, or waiting. */
export type GatedVerdict = { kind: 'skip'; by: SkipCause } | { kind: 'wait'; free: () => Promise<boolean> };

/**
 * Page side (see the file comment): the verdicts for the won `run` items of a page of `job`
 * (indexes into `items`) whose schedule has backfill work. `acquiredAt`: the page's grant (store
 * time; every read here comes after it).
 */
export async function judgeGated(
  s: NodeState,
  job: Job,
  items: readonly PageItem[],
  won: readonly number[],
  acquiredAt: number,
): Promise<Map<number, GatedVerdict>> {
  const out = new Map<number, GatedVerdict>();
  const name = job.spec.name;
  if (job.spec.overlap !== 'skip') return out;
  const runs = won.filter((i) => items[i]!.kind === 'run');
  if (runs.length === 0) return out;
  let known = s.gateKnowledge;
  if (s.storeClock.estimate() - known.at > STALE_KNOWLEDGE_MS) known = await readGateKnowledge(s, name);
  const flagged = runs.filter((i) => known.schedules.has(scheduleKey(name, items[i]!.id)));
  await Promise.all(
    flagged.map(async (i) => {
      const item = items[i]!;
      const going = await gatedRuns(s.store, name, item.id, acquiredAt);
      // Named only when its holder's mark shows its handler called by the fire time (a record of
      // a start may stand for none: run/invoked-mark.ts); else the item waits for the gate.
      const started = going.runs.filter((r) => r.startedAt <= item.fireTime && item.fireTime <= acquiredAt);
      const by = await firstCalledBy(s.store, started, item.fireTime, (r) => ({
        key: runMarkKey(r as OccurrenceId, r.token),
        start: r.startedAt,
      }));
      if (by)
        out.set(i, { kind: 'skip', by: { fireTime: new Date(by.fireTime), node: by.node, token: by.token } });
      else if (going.held)
        out.set(i, { kind: 'wait', free: async () => !(await gatedHeld(s, name, item.id, acquiredAt)) });
    }),
  );
  return out;
}

/**
 * Whether a backfill run of stored schedule `id` may start, or is in flight, beside a page whose
 * record was written by `recordSince` (store time) or earlier (see `judgeGated`).
 */
export async function gatedHeld(
  s: NodeState,
  job: string,
  id: string,
  recordSince: number,
): Promise<boolean> {
  return (await gatedRuns(s.store, job, id, recordSince)).held;
}

/**
 * The runs in flight of a stored schedule's gate (in-flight records), and whether one of them, or
 * a claim of its gate that may not have seen the page's record, holds it: a gate taken after
 * `recordSince` (the page's record was written by then) was taken by a backfill claim whose look
 * at the page records comes later and finds this page — it gives the gate back, never starts.
 * (Waiting for such a claim as well, a page item waited for the backfill's retries at every
 * poll: simulator, pauses and backfills mix, seed 4, +4 s.)
 */
async function gatedRuns(
  store: Store,
  job: string,
  id: string,
  recordSince: number,
): Promise<{ runs: InflightRecord[]; held: boolean }> {
  const [records, gate] = await Promise.all([
    store.scan(`${keys.inflightPrefix(job)}${esc(id)}|`, { limit: 100 }),
    store.inspect(keys.runGate(job, id, undefined)),
  ]);
  const runs: InflightRecord[] = [];
  for (const r of records) {
    try {
      runs.push(JSON.parse(r.value) as InflightRecord);
    } catch {
      // Not a record this build wrote.
    }
  }
  return { runs, held: records.length > 0 || (gate !== null && gate.acquiredAt <= recordSince) };
}

/**
 * Backfill side (see the file comment): whether a page of `job` holds a run of stored schedule
 * `id` without a final outcome on record — a page not started (it may start), or started and
 * won with no final history entry (going, or dead and waiting for its recovery). A page whose
 * claim was granted at or after `gateSince` (the backfill claim's grant of the gate) is not
 * counted: it finds the gate taken before its record and waits for the backfill run
 * (`gatedRuns`), so waiting for it too would be a deadlock. (A page not started yet is counted:
 * it says when it was granted only in its start record.)
 */
export async function pageRunGoing(
  store: Store,
  job: string,
  id: string,
  gateSince: number,
  retries: number,
): Promise<boolean> {
  const records = await store.scan(keys.pageRecordPrefix(job), { limit: 10_000 });
  const looks: { item: PageItem }[] = [];
  for (const r of records) {
    let rec: PageRecord;
    try {
      rec = decodePageRecord(r.value);
    } catch {
      continue;
    }
    rec.items.forEach((item, i) => {
      if (item.id !== id || item.kind !== 'run') return;
      if (rec.started && rec.started.claimedAt >= gateSince) return;
      if (!rec.started || rec.started.won.includes(i)) looks.push({ item });
    });
  }
  if (looks.length === 0) return false;
  // From the page's attempt through its retries: a failed attempt retried is no end, and a
  // retry that ended is (read at the page's attempt only, the run looked going until the page's
  // record went).
  const wanted = looks.flatMap(({ item }) =>
    runHistoryKeys(
      { job, scheduleId: item.id, fireTime: item.fireTime, shard: undefined },
      item.attempt ?? 1,
      retries,
    ),
  );
  const read = await store.getMany(wanted);
  // (An abandoned attempt is no end either: its page's recovery runs it again.)
  return latestPerRun(wanted, read, retries).some(
    (e) => e === null || !FINAL_STATUSES.has(e.status) || e.willRetry === true,
  );
}
