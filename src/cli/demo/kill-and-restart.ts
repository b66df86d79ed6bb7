/**
 * The demo's fault: halfway, the node running KILL_TARGET_JOB is SIGKILLed in the middle of that
 * run, and restarted RESTART_AFTER_MS later. What it had going is recorded in `tracker.kill`, so
 * the live view and the summary can show those runs recovered with a higher token.
 */
import { systemClock } from '../../core/clock.js';
import type { NodeFleet } from './fleet.js';
import type { LiveView } from './live-view.js';
import type { ParentMessage } from './protocol.js';
import { type RunTracker, runKey } from './run-tracker.js';
import { KILL_TARGET_JOB, LOCK_AT_MOST_FOR_MS } from './sample-jobs.js';

/** How long the killed node stays down. */
export const RESTART_AFTER_MS = 3_000;
/** How long the demo's end waits for a restarted node to say it is ready (a loaded machine is slow). */
export const RESTART_READY_WAIT_MS = 4_000;

export interface KillPlan {
  /** `performance.now()` when the demo started, when every node was ready, and when it ends. */
  t0: number;
  readyPerf: number;
  endAt: number;
  durationMs: number;
  fleet: NodeFleet;
  tracker: RunTracker;
  view: LiveView;
  /** Ctrl-C: give up the search. */
  interrupted: AbortSignal;
  /** The demo is stopping: do not restart. */
  shuttingDown: AbortSignal;
}

export interface KillTask {
  /** Settles when a node was killed, or the search gave up. */
  done: Promise<void>;
  /** Settles when the killed node is back (or shutdown came first); resolved if none was killed. */
  restart: Promise<void>;
}

/**
 * Starts the search for a node to kill; the demo awaits `done` at its end, then `restart` once
 * shutting down.
 *
 * @example
 * const task = killAndRestart({ t0, readyPerf, endAt, durationMs, fleet, tracker, view, interrupted, shuttingDown });
 */
export function killAndRestart(plan: KillPlan): KillTask {
  const { t0, readyPerf, endAt, durationMs, fleet, tracker, view, interrupted, shuttingDown } = plan;
  const { style } = view;
  const { active, crashAnswers } = tracker;
  // A run of the kill target is mid-way (200 ms to 3 s old, with over a second to go) for 2.8 s of
  // every 6 s (it runs 4.5 s, the next fire time is skipped, the one after runs): a search of
  // at least 3.5 s always finds one. Killed by `latestKill`, its recovery starts within about
  // lockAtMostFor + one poll, before the end (and the end waits for it otherwise).
  const latestKill = endAt - 3_500;
  const killAt = Math.max(readyPerf + 1_500, Math.min(t0 + durationMs / 2, latestKill - 3_500));
  const task: KillTask = { done: Promise.resolve(), restart: Promise.resolve() };
  task.done = (async () => {
    await systemClock.sleep(killAt - performance.now(), interrupted);
    while (!tracker.kill && !interrupted.aborted && performance.now() <= latestKill) {
      const now = performance.now();
      const target = [...active.values()].find((a) => {
        const h = fleet.current.get(a.node);
        const age = now - a.heardAt;
        return a.run.job === KILL_TARGET_JOB && h?.ready && !h.exited && age >= 200 && age <= 3_000;
      });
      if (!target) {
        await systemClock.sleep(50, interrupted);
        continue;
      }
      const h = fleet.current.get(target.node)!;
      // The node picks the instant itself (see crashWhenSafe in node-process.ts) and dies by SIGKILL.
      h.expectedExit = true;
      const answer = await new Promise<'killed' | 'declined' | 'timeout'>((resolve) => {
        const timer = setTimeout(() => resolve('timeout'), 3_000);
        crashAnswers.set(h.name, () => {
          clearTimeout(timer);
          resolve('declined');
        });
        void h.exit.then(() => {
          clearTimeout(timer);
          resolve('killed');
        });
        h.child.send({ type: 'crash', job: KILL_TARGET_JOB } satisfies ParentMessage);
      });
      crashAnswers.delete(h.name);
      if (answer === 'declined') {
        h.expectedExit = false;
        continue;
      }
      if (answer === 'timeout') {
        h.child.kill('SIGKILL');
        await h.exit;
      }
      const runs = [...active.values()].filter((a) => a.node === h.name);
      for (const a of runs) active.delete(runKey(a.run.job, a.run.fireTime, a.run.shard, a.run.token));
      tracker.kill = { node: h.name, runs: runs.map((a) => ({ ...a.run, node: h.name })) };
      tracker.readLedger(); // what completed before the kill is shown before it
      view.event(
        style.red(
          `✗ SIGKILL ${h.name}${runs.length > 0 ? ` in the middle of ${runs.length === 1 ? 'a run' : `${runs.length} runs`}:` : ''}`,
        ),
      );
      for (const a of runs) view.detail(a.run, `attempt ${a.run.attempt}, token ${a.run.token}`);
      view.event(
        style.dim(
          `  its claims lapse within lockAtMostFor (${LOCK_AT_MOST_FOR_MS / 1000}s); then a live node (maybe the restarted one) re-runs them with a higher token`,
        ),
      );
      task.restart = (async () => {
        await systemClock.sleep(RESTART_AFTER_MS, shuttingDown);
        if (shuttingDown.aborted) return;
        const again = fleet.start(h.name);
        while (!again.ready && !again.exited && !shuttingDown.aborted) await systemClock.sleep(25);
        if (again.ready)
          view.event(
            `${style.green('↻')} ${style.node(h.name)} ${style.green(`restarted (pid ${again.child.pid})`)}`,
          );
      })();
    }
    if (!tracker.kill && !interrupted.aborted)
      view.event(style.yellow(`no node was running ${KILL_TARGET_JOB} in time: nothing was killed`));
  })();
  return task;
}
