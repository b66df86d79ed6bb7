/**
 * Stored schedules in a simulation: checked as `schedules.upsert` checks them, written on the store
 * server through the real `schedules.upsert` / `schedules.remove` (at virtual time 0 before the
 * nodes start, or at their `upsertAt` / `removeAt`), and turned into what the checker expects of
 * them: the fire times that must be handled, and the ones that may run at all.
 */
import { invalidArgument, OncelyError } from '../../core/errors.js';
import { silentLogger } from '../../core/logger.js';
import { didYouMean } from '../../core/options.js';
import type { CompiledExclude } from '../../schedule/exclude.js';
import { nextFireTimes } from '../../schedule/fire-times.js';
import { compileJitter, startOfFire } from '../../schedule/jitter.js';
import type { CompiledTrigger } from '../../schedule/trigger.js';
import { validateSchedules } from '../../scheduler/control/schedule-input.js';
import { createScheduler, type Scheduler } from '../../scheduler/scheduler.js';
import type { StoredSchedule } from '../../scheduler/types.js';
import type { Store } from '../../store/types.js';
import type { History } from './history.js';
import { MAX_SIM_SCHEDULES, type SimJob } from './options.js';
import { Rng } from './random.js';
import { EPOCH } from './sim-store.js';
import { NodeClock, type VirtualTime } from './virtual-time.js';

const FIELDS = [
  'id',
  'cron',
  'every',
  'at',
  'timezone',
  'jitter',
  'startAt',
  'endAt',
  'maxRuns',
  'exclude',
  'data',
  'upsertAt',
  'removeAt',
];

/** One version of a stored schedule, validated, with the window it is in the store. */
export interface ScheduleVersion {
  job: string;
  /** What `schedules.upsert` gets. */
  input: StoredSchedule;
  trigger: CompiledTrigger;
  /** Its run limit, if any (docs/bounds.md). */
  maxRuns?: number;
  /** Its exclusions, if any (docs/calendars.md). */
  exclude?: CompiledExclude;
  /** Virtual ms of its upsert (0: before the nodes start). */
  from: number;
  /** Virtual ms at which it is removed or replaced by the id's next version (`Infinity`: never). */
  to: number;
  /** It ends by `schedules.remove` (else it is replaced, or never ends). */
  removed: boolean;
}

/** What the checker expects of one stored schedule (all its versions). */
export interface CheckedSchedule {
  job: string;
  id: string;
  /** Fire times (store ms) inside the checked window that must be handled (run, or skipped on record). */
  required: number[];
  /** Every fire time (store ms) that may run at all: a run of any other is `unexpected-fire-time`. */
  allowed: Set<number>;
  /**
   * With `maxRuns` on every version: how many of its fire times may start in all (each upsert
   * starts the count again, so the versions' sum); more is `too-many-runs`.
   */
  maxRuns?: number;
  /** The exclude lists of its versions: an `excluded` skip is borne out when one matches (docs/calendars.md). */
  excludes?: CompiledExclude[];
  /**
   * With `jitter`, when its fire time is to start: the fire time plus the offset every node
   * computes (checker-starts.ts). Only for a schedule of one version (versions may differ).
   */
  startOf?: (fireTime: number) => number;
}

/**
 * Validates the jobs' `schedules` (each entry as `schedules.upsert` would, plus `upsertAt` and
 * `removeAt`); bad input throws `INVALID_ARGUMENT` naming the job, the entry and what to fix.
 */
export async function checkSchedules(
  jobs: readonly SimJob[],
  durationMs: number,
): Promise<ScheduleVersion[]> {
  const versions: ScheduleVersion[] = [];
  const jobOfId = new Map<string, string>();
  const lastOf = new Map<string, ScheduleVersion>();
  for (const job of jobs) {
    if (job.schedules === undefined) continue;
    if (!Array.isArray(job.schedules))
      throw invalidArgument(`simulate: job ${JSON.stringify(job.name)} schedules must be an array`);
    for (const [i, raw] of job.schedules.entries()) {
      const where = `simulate: job ${JSON.stringify(job.name)} schedules[${i}]`;
      if (versions.length >= MAX_SIM_SCHEDULES)
        throw invalidArgument(
          `simulate: at most ${MAX_SIM_SCHEDULES} stored schedules in all jobs together (every version counts)`,
        );
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
        throw invalidArgument(
          `${where} must be an object { id, cron | every | at, timezone?, data?, upsertAt?, removeAt? }`,
        );
      const unknown = Object.keys(raw).find((k) => !FIELDS.includes(k));
      if (unknown !== undefined)
        throw invalidArgument(
          `${where}: unknown field ${JSON.stringify(unknown)}${didYouMean(unknown, FIELDS)}; allowed: ${FIELDS.join(', ')}${unknown === 'job' ? ' (the schedule is of the job it is listed under)' : ''}`,
        );
      const { upsertAt, removeAt, ...fields } = raw;
      const time = (value: number | undefined, what: string) => {
        if (value !== undefined && !(typeof value === 'number' && value >= 0 && value <= durationMs))
          throw invalidArgument(`${where}: ${what} must be virtual ms from 0 to durationMs (${durationMs})`);
      };
      time(upsertAt, 'upsertAt');
      time(removeAt, 'removeAt');
      const from = upsertAt ?? 0;
      if (removeAt !== undefined && removeAt <= from)
        throw invalidArgument(`${where}: removeAt must be after upsertAt (${from})`);
      const input = Object.fromEntries(
        Object.entries({ ...fields, job: job.name }).filter(([, v]) => v !== undefined),
      ) as unknown as StoredSchedule;
      let trigger: CompiledTrigger;
      let maxRuns: number | undefined;
      let exclude: CompiledExclude | undefined;
      try {
        const [valid] = await validateSchedules([input]);
        trigger = valid!.trigger;
        maxRuns = valid!.maxRuns;
        exclude = valid!.exclude;
      } catch (err) {
        if (!(err instanceof OncelyError)) throw err;
        throw invalidArgument(`${where}: ${err.message.replace(/^schedules\.upsert: entry 0: /, '')}`);
      }
      const id = input.id;
      const other = jobOfId.get(id);
      if (other !== undefined && other !== job.name)
        throw invalidArgument(
          `${where}: id ${JSON.stringify(id)} is also a schedule of job ${JSON.stringify(other)} (ids are unique per store)`,
        );
      jobOfId.set(id, job.name);
      const before = lastOf.get(id);
      if (before) {
        if (before.to === Number.POSITIVE_INFINITY || upsertAt === undefined || upsertAt < before.to)
          throw invalidArgument(
            `${where}: id ${JSON.stringify(id)} is listed before; a later version needs an upsertAt at or after the earlier one's removeAt`,
          );
        // Upserted at the instant the earlier version is removed: a re-upsert, no removal between.
        if (upsertAt === before.to) before.removed = false;
      }
      const version: ScheduleVersion = {
        job: job.name,
        input,
        trigger,
        ...(maxRuns !== undefined && { maxRuns }),
        ...(exclude !== undefined && { exclude }),
        from,
        to: removeAt ?? Number.POSITIVE_INFINITY,
        removed: removeAt !== undefined,
      };
      versions.push(version);
      lastOf.set(id, version);
    }
  }
  return versions;
}

/**
 * Writes the schedules on the store server, as an application would: through the real
 * `schedules.upsert` / `remove` of a scheduler that is never started (no network faults on the
 * way). The versions upserted at 0 are written now, before the nodes boot; the others, and the
 * removals, at their virtual time.
 */
export async function writeSchedules(
  versions: readonly ScheduleVersion[],
  server: Store,
  time: VirtualTime,
  seed: number,
  history: History,
): Promise<void> {
  if (versions.length === 0) return;
  const rng = Rng.derive(seed, 'setup');
  const setup: Scheduler = createScheduler({
    store: server,
    node: 'sim-setup',
    clock: new NodeClock(time, 1, 0, () => 0),
    random: () => rng.next(),
    logger: silentLogger,
  });
  const upserts = new Map<number, StoredSchedule[]>();
  const removals = new Map<number, string[]>();
  for (const v of versions) {
    upserts.set(v.from, [...(upserts.get(v.from) ?? []), v.input]);
    if (v.removed) removals.set(v.to, [...(removals.get(v.to) ?? []), v.input.id]);
  }
  const upsert = async (list: StoredSchedule[]) => {
    try {
      await setup.schedules.upsert(list);
      history.line('setup', `upserted ${list.length} schedule(s): ${names(list.map((s) => s.id))}`);
    } catch (err) {
      history.line('setup', `upsert failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  for (const [at, list] of upserts) {
    if (at === 0) await upsert(list);
    else time.at(at, () => void upsert(list));
  }
  for (const [at, ids] of removals) {
    time.at(at, () => {
      void Promise.all(ids.map((id) => setup.schedules.remove(id))).then(
        () => history.line('setup', `removed ${ids.length} schedule(s): ${names(ids)}`),
        (err: unknown) =>
          history.line('setup', `remove failed: ${err instanceof Error ? err.message : String(err)}`),
      );
    });
  }
}

function names(ids: readonly string[]): string {
  return ids.length <= 5 ? ids.join(', ') : `${ids.slice(0, 5).join(', ')}, … (+${ids.length - 5})`;
}

/**
 * What the checker expects of each schedule. A version's fire times are the ones after its upsert
 * (the next fire time counts from the store's now then). Must be handled: those inside the
 * checked window [`window[0]`, `window[1]`] and at least `marginMs` before the version ends (a fire
 * time just before a removal may be claimed or not: the removal may land first). May run: those up
 * to `marginMs` after it ends (a due read just before a removal still runs what it read) and up to
 * the end of the simulation.
 */
export function expectSchedules(
  versions: readonly ScheduleVersion[],
  window: [number, number],
  endMs: number,
  marginMs: number,
): CheckedSchedule[] {
  const byId = new Map<string, CheckedSchedule>();
  for (const v of versions) {
    const id = v.input.id;
    let checked = byId.get(id);
    if (!checked) {
      checked = { job: v.job, id, required: [], allowed: new Set(), maxRuns: 0 };
      byId.set(id, checked);
    }
    // maxRuns: which fire times its runs fall on depends on what was missed: none is required.
    if (v.exclude) checked.excludes = [...(checked.excludes ?? []), v.exclude];
    if (v.maxRuns === undefined) delete checked.maxRuns;
    else if (checked.maxRuns !== undefined) checked.maxRuns += v.maxRuns;
    const last = EPOCH + Math.min(endMs, v.to + marginMs);
    const mustUntil = EPOCH + Math.min(window[1], v.to - marginMs);
    for (let after = EPOCH + v.from; ; ) {
      const next = nextFireTimes(v.trigger, after, 100).filter((t) => t <= last);
      for (const t of next) {
        checked.allowed.add(t);
        if (t >= EPOCH + window[0] && t <= mustUntil && v.maxRuns === undefined) checked.required.push(t);
      }
      if (next.length < 100) break;
      after = next.at(-1)!;
    }
  }
  for (const c of byId.values()) c.required = [...new Set(c.required)].sort((a, b) => a - b);
  for (const c of byId.values()) {
    const of = versions.filter((v) => v.input.id === c.id);
    const v = of[0]!;
    const jitter = compileJitter(v.input.jitter, undefined, `schedule ${c.id}`);
    if (of.length !== 1 || jitter === undefined) continue;
    c.startOf = (f) => startOfFire(jitter, v.trigger, v.job, c.id, f);
  }
  return [...byId.values()];
}
