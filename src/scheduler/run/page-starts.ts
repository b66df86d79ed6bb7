import { startTimer } from '../../core/clock.js';
import type { Lease } from '../../store/types.js';
import type { NodeState } from '../node-state.js';
import type { PageRun } from './page-run.js';
import type { Claim } from './run-records.js';
import { localWaitFor } from './start-at.js';

/**
 * How long the history write of a run that waited for its start waits for others to share its
 * store call: such runs start one by one, so end one by one; a jittered fan-out then writes its
 * history in a call per quarter second, not a call per run.
 */
const WAITED_FINISH_LINGER_MS = 250;
/**
 * How often a run waiting for its schedule's gate looks again (`launchWhenFree`; at most the poll
 * interval): a backfill waiting for this run to end looks every 100 ms (claim/backfill-claim.ts),
 * so a slower look here leaves both waiting (simulator: a look per 1 s poll held each on-time run
 * ~1 s behind a backfill, and each backfill behind it, until the window ended).
 */
const FREE_LOOK_MS = 200;
/** Runs that wait for their starts are started in rounds this long (see `launchAtStarts`). */
const START_ROUND_MS = 100;

/** A run of a page: when it is to start (store time), and its claim (`waited`: it waited for that start). */
export interface PageStart {
  start: number;
  claim: (waited: boolean) => Claim;
}

/** Starts claims of one page that start together (Runs.launchPage); resolves when their runs have ended. */
export type LaunchTogether = (claims: Claim[]) => Promise<void>;

/**
 * Launches the runs of a page whose lease `lease` was granted by the answer that came at local
 * monotonic time `repliedAt`: each at its start, never before it on the store's clock — at once
 * when that has passed, else `start − acquiredAt` after the reply at the earliest (the grant came
 * before the reply), with a margin for this node's clock running fast against the store's (2 %,
 * the simulator's worst drift). Runs wait when the page was claimed ahead of their starts
 * (jittered schedules, due/due-entry.ts) or taken over by a recovery before them. Those that
 * start at once, and those of one round, are launched together (`launch`).
 */
export function launchAtStarts(
  s: NodeState,
  page: PageRun,
  lease: Lease,
  repliedAt: number,
  runs: readonly PageStart[],
  launch: LaunchTogether,
): void {
  const atOnce: Claim[] = [];
  const later: { at: number; run: PageStart }[] = [];
  for (const r of runs) {
    const ahead = r.start - lease.acquiredAt;
    if (ahead <= 0) atOnce.push(r.claim(false));
    else later.push({ at: repliedAt + localWaitFor(ahead), run: r });
  }
  if (atOnce.length > 0) void launch(atOnce);
  if (later.length === 0) return;
  page.lingerMs = WAITED_FINISH_LINGER_MS;
  // Started in rounds of START_ROUND_MS (each run at the end of its round, so at most that much
  // after its start): one timer wake-up per round and page, not one per run with a sleep and an
  // abort listener each — a page's runs are spread over a second or two.
  const rounds = new Map<number, PageStart[]>();
  for (const r of later) {
    const at = Math.ceil(r.at / START_ROUND_MS) * START_ROUND_MS;
    const round = rounds.get(at);
    if (round) round.push(r.run);
    else rounds.set(at, [r.run]);
  }
  const order = [...rounds.keys()].sort((a, b) => a - b);
  // Meanwhile each holds its slot (counted as a handler: the node claims no more than it can
  // start), and stop() waits for them, then for their runs. Stop giving up (`abandon`) before one
  // started leaves it to recovery, as the page's other unfinished runs are: abandoned, the page's
  // lease freed, its record kept.
  s.handlers += later.length;
  const abandon = s.abandon.signal;
  const started: Promise<void>[] = [];
  const waited = new Promise<void>((resolve) => {
    let next = 0;
    let cancel: (() => void) | undefined;
    const end = () => {
      abandon.removeEventListener('abort', onAbandon);
      void Promise.allSettled(started).then(() => resolve());
    };
    const onAbandon = () => {
      cancel?.();
      for (; next < order.length; next++) {
        const round = rounds.get(order[next]!)!;
        s.handlers -= round.length;
        for (const _ of round) started.push(page.book().ended?.(false) ?? Promise.resolve());
      }
      end();
    };
    const step = () => {
      cancel = undefined;
      if (abandon.aborted) return;
      const now = s.clock.monotonic();
      for (; next < order.length && order[next]! <= now; next++) {
        const round = rounds.get(order[next]!)!;
        s.handlers -= round.length;
        started.push(launch(round.map((r) => r.claim(true))));
      }
      if (next < order.length) cancel = startTimer(s.clock, order[next]! - now, step);
      else end();
    };
    if (abandon.aborted) onAbandon();
    else {
      abandon.addEventListener('abort', onAbandon, { once: true });
      step();
    }
  });
  s.running.add(waited);
  void waited.finally(() => s.running.delete(waited));
}

/** Local monotonic time before which a run to start at `start` (store time) must not, its page's lease granted at `acquiredAt` and answered at `repliedAt` (see `launchAtStarts`). */
export function notBefore(start: number, acquiredAt: number, repliedAt: number): number {
  const ahead = start - acquiredAt;
  return ahead <= 0 ? repliedAt : repliedAt + localWaitFor(ahead);
}

/**
 * Launches one run of a page, not before `notBefore` (local monotonic), once `free()` says its stored schedule's gate is free (a backfill
 * run of the schedule held it when the page was claimed: claim/gated-runs.ts), asking again every
 * FREE_LOOK_MS. Meanwhile it holds its slot, the page keeps its lease, and stop() waits for it;
 * stop giving up (`abandon`), or the page's lease lost, leaves it to recovery, as launchAtStarts
 * leaves a run that had not started. A failed look is made again at the next interval.
 */
export function launchWhenFree(
  s: NodeState,
  page: PageRun,
  notBefore: number,
  free: () => Promise<boolean>,
  launch: () => Promise<void>,
): void {
  s.handlers += 1;
  const abandon = s.abandon.signal;
  const waited = (async () => {
    for (;;) {
      if (abandon.aborted || page.lost) {
        s.handlers -= 1;
        await (page.book().ended?.(false) ?? Promise.resolve());
        return;
      }
      if (s.clock.monotonic() >= notBefore && (await free().catch(() => false))) {
        s.handlers -= 1;
        await launch();
        return;
      }
      await new Promise<void>((resolve) => {
        const early = notBefore - s.clock.monotonic();
        const cancel = startTimer(s.clock, early > 0 ? early : Math.min(s.pollMs, FREE_LOOK_MS), done);
        function done() {
          abandon.removeEventListener('abort', onAbort);
          resolve();
        }
        function onAbort() {
          cancel();
          done();
        }
        abandon.addEventListener('abort', onAbort, { once: true });
      });
    }
  })();
  s.running.add(waited);
  void waited.finally(() => s.running.delete(waited));
}
