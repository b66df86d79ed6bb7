/**
 * The application's control calls in a simulation — pauses and resumes (sim-pauses.ts), backfills
 * (sim-backfills.ts) — made at their virtual time, as stored.ts upserts schedules: through the
 * real `scheduler.pause` / `resume`, `schedules.pause` / `resume` and `backfill` of a scheduler
 * that is never started, on the store server itself (no network faults: the application that
 * calls is not under test). A call that fails is a trace line and a `setup-failed` violation.
 */
import { silentLogger } from '../../core/logger.js';
import { createScheduler, type Scheduler } from '../../scheduler/scheduler.js';
import type { Store } from '../../store/types.js';
import type { History } from './history.js';
import { Rng } from './random.js';
import type { BackfillPlan } from './sim-backfills.js';
import { type PausePlan, pauseTarget } from './sim-pauses.js';
import { NodeClock, type VirtualTime } from './virtual-time.js';

/** One call: when, and in which order among calls at one instant (resumes, then pauses, then backfills). */
interface Call {
  at: number;
  rank: number;
  what: string;
  run: (setup: Scheduler) => Promise<string>;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Makes the calls at their virtual times (each within one virtual instant: the store server
 * answers without a timer). A resume and a pause at one instant: the resume first.
 */
export function writeControls(
  pauses: readonly PausePlan[],
  backfills: readonly BackfillPlan[],
  server: Store,
  time: VirtualTime,
  seed: number,
  history: History,
): void {
  if (pauses.length === 0 && backfills.length === 0) return;
  const rng = Rng.derive(seed, 'controls');
  const setup: Scheduler = createScheduler({
    store: server,
    node: 'sim-setup',
    clock: new NodeClock(time, 1, 0, () => 0),
    random: () => rng.next(),
    logger: silentLogger,
  });
  const calls: Call[] = [];
  for (const p of pauses) {
    const target = pauseTarget(p);
    const note = p.note === undefined ? {} : { note: p.note };
    calls.push({
      at: p.at,
      rank: 1,
      what: `pause ${target}`,
      run: async (s) => {
        if (p.scheduleId === undefined) await s.pause(p.job, note);
        else await s.schedules.pause(p.scheduleId, note);
        return `paused ${target}${p.note === undefined ? '' : ` (${p.note})`}`;
      },
    });
    if (p.resumeAt !== undefined)
      calls.push({
        at: p.resumeAt,
        rank: 0,
        what: `resume ${target}`,
        run: async (s) => {
          if (p.scheduleId === undefined) await s.resume(p.job);
          else await s.schedules.resume(p.scheduleId);
          return `resumed ${target}`;
        },
      });
  }
  for (const b of backfills) {
    const target = pauseTarget(b);
    calls.push({
      at: b.at,
      rank: 2,
      what: `backfill of ${target}`,
      run: async (s) => {
        const { queued } = await s.backfill({
          job: b.job,
          ...(b.scheduleId !== undefined && { scheduleId: b.scheduleId }),
          from: b.from,
          to: b.to,
        });
        return `backfill of ${target} [${iso(b.from)}, ${iso(b.to)}): ${b.fireTimes.length} fire time(s) in range, queued ${queued} occurrence(s)`;
      },
    });
  }
  calls.sort((a, b) => a.at - b.at || a.rank - b.rank);
  for (const call of calls)
    time.at(call.at, () => {
      call.run(setup).then(
        (line) => history.line('setup', line),
        (err: unknown) => {
          const message = `${call.what} at ${call.at} failed: ${err instanceof Error ? err.message : String(err)}`;
          history.setupFailures.push(message);
          history.line('setup', message);
        },
      );
    });
}
