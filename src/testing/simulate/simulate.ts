import { parseDuration } from '../../core/duration.js';
import { invalidArgument } from '../../core/errors.js';
import { nextFireTimes } from '../../schedule/fire-times.js';
import { startOfFire } from '../../schedule/jitter.js';
import { jobSpec } from '../../scheduler/job-options.js';
import { type CheckedJob, check, type Violation } from './checker.js';
import { writeControls } from './controls.js';
import { History } from './history.js';
import { type NodeCounters, SimNode, type World } from './node.js';
import {
  checkRange,
  checkRate,
  drawPlan,
  type FaultPlan,
  type SimulateOptions,
  WARMUP_MS,
} from './options.js';
import { checkBackfills, expectBackfills } from './sim-backfills.js';
import { checkCalendars, excludedBy, writeCalendars } from './sim-calendars.js';
import { checkPauses, pausedAfter, pauseJudges } from './sim-pauses.js';
import { EPOCH, simServer, storeClock } from './sim-store.js';
import { checkSchedules, expectSchedules, writeSchedules } from './stored.js';
import { MAX_TIMERS_AT_ONE_INSTANT, VirtualTime } from './virtual-time.js';

/** Counts of one simulation run. */
export interface SimulationStats {
  /** Virtual time simulated, ms. */
  virtualMs: number;
  /** Real time taken, ms. */
  wallMs: number;
  /** Virtual timers fired (each one a step of the simulated world). */
  steps: number;
  /** Store calls the nodes made. */
  storeCalls: number;
  /** Calls whose request was lost (never reached the store). */
  lostRequests: number;
  /** Calls the store applied whose reply was lost. */
  lostReplies: number;
  /** Node crashes. */
  crashes: number;
  /** Network partitions. */
  partitions: number;
  /** Handler invocations, and occurrences stored as succeeded. */
  runs: number;
  /** See `runs`. */
  succeeded: number;
  /** `error` events the schedulers emitted (store calls that failed). */
  schedulerErrors: number;
  /** Stored schedules' due entries claimed in pages: page claims the store granted, and entries they moved. */
  pageClaims: number;
  /** See `pageClaims`. */
  pageMoves: number;
  /** Pages whose lease lapsed, taken over by a node (a recovery: a new token for the page). */
  pageTakeovers: number;
  /** Handler invocations under a page's token (a page claim's or a takeover's). */
  pageRuns: number;
}

/** What `simulate` found. */
export interface SimulationResult {
  /** No guarantee was broken. */
  ok: boolean;
  /** The seed of this run. */
  seed: number;
  /** Every broken guarantee (see `ViolationKind`); empty when `ok`. */
  violations: Violation[];
  /** One line per event: virtual time, node, what. */
  trace: string[];
  /** Counts: calls, faults, runs. */
  stats: SimulationStats;
  /** The fault plan this run used (pass it back as `plan` to replay or shrink). */
  plan: FaultPlan;
}

/**
 * Runs the real scheduler code — `createScheduler`, its loop, claims, keep-alives, recovery — on N
 * nodes in this process, on virtual time, against one simulated store server (a real
 * `MemoryStore` behind a simulated network), with the faults drawn from `seed`; then checks the
 * history (checker.ts). Same options and seed, same trace.
 *
 * What is simulated, not real: the network (latency, loss, partitions, time-outs), the store
 * server (the in-memory backend, on a virtual clock), process crashes (an incarnation is frozen),
 * local clocks (rate, origin, late timers). Everything else is the code that runs in production.
 *
 * @example
 * const result = await simulate({
 *   seed: 42,
 *   nodes: 3,
 *   jobs: [{ name: 'report', options: { every: '1s', lockAtMostFor: '5s' } }],
 *   durationMs: 60_000,
 *   faults: { latencyMs: [2, 40], lostReplyRate: 0.02, partitions: 2, crashes: 2 },
 * });
 * if (!result.ok) console.log(result.violations, result.trace.join('\n'));
 */
export async function simulate(options: SimulateOptions): Promise<SimulationResult> {
  const wallStart = performance.now();
  const { seed } = options;
  if (!Number.isInteger(seed)) throw invalidArgument('simulate: seed must be a whole number');
  const nodes = options.nodes ?? 3;
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > 100)
    throw invalidArgument('simulate: nodes must be a whole number from 1 to 100');
  const healthy = Math.min(nodes, options.healthyNodes ?? 1);
  const durationMs = options.durationMs ?? 60_000;
  if (!(durationMs > 0)) throw invalidArgument('simulate: durationMs must be positive');
  if (!Array.isArray(options.jobs) || options.jobs.length === 0)
    throw invalidArgument('simulate: jobs must list at least one { name, options }');
  const faults = options.faults ?? {};
  const latencyMs = checkRange(faults.latencyMs, 'faults.latencyMs') ?? [2, 20];
  const specs = options.jobs.map((j) => {
    checkRange(j.runMs, `job ${j.name} runMs`);
    return jobSpec(j.name, j.options);
  });
  const versions = await checkSchedules(options.jobs, durationMs);
  const pauses = checkPauses(options.jobs, versions, durationMs);
  const backfills = checkBackfills(options.jobs, specs, versions, durationMs);
  const calendars = checkCalendars(options.calendars);
  // Every calendar an exclusion names must be given (as upsert and start() require).
  for (const x of [...specs.map((s) => s.exclude), ...versions.map((v) => v.exclude)])
    for (const id of x?.calendars ?? [])
      if (calendars(id) === undefined)
        throw invalidArgument(
          `simulate: an exclusion names calendar ${JSON.stringify(id)}, which calendars does not list`,
        );
  const pollMs = parseDuration(options.scheduler?.pollInterval ?? '1s', 'scheduler.pollInterval');
  const longestLease = Math.max(...specs.map((s) => s.lockAtMostForMs));
  const longestRun = Math.max(...options.jobs.map((j) => j.runMs?.[1] ?? 300));
  /** How long after a run's start a recovery may still run it (or a run end): a lease, a run, two polls. */
  const recoveryReach = longestLease + longestRun + 2 * pollMs;
  const settleMs = options.settleMs ?? recoveryReach + 5_000;
  const faultsUntil = durationMs - settleMs;
  const plan = options.plan ?? drawPlan(seed, nodes, healthy, faults, [WARMUP_MS, faultsUntil]);

  const time = new VirtualTime();
  const history = new History(() => time.now);
  const world: World = {
    seed,
    time,
    server: options.server ? options.server(storeClock(time)) : simServer(time),
    history,
    jobs: options.jobs,
    scheduler: options.scheduler ?? {},
    stall: { rate: checkRate(faults.stallRate, 'faults.stallRate'), ms: faults.stallMs ?? 500 },
  };
  // Calendars, then stored schedules (an upsert checks the calendars it names): on the server
  // before the nodes boot (schedules: or at their upsertAt / removeAt).
  await writeCalendars(options.calendars, world.server, time, history);
  await writeSchedules(versions, world.server, time, seed, history);
  // Pauses, resumes and backfills at their virtual time (after the upserts of the same instant).
  writeControls(pauses, backfills, world.server, time, seed, history);
  const counters: NodeCounters = { storeCalls: 0, lostRequests: 0, lostReplies: 0, schedulerErrors: 0 };
  const lostRequestRate = checkRate(faults.lostRequestRate, 'faults.lostRequestRate');
  const lostReplyRate = checkRate(faults.lostReplyRate, 'faults.lostReplyRate');
  const sims = Array.from({ length: nodes }, (_, i) => {
    const isFaulty = i >= healthy;
    return new SimNode(
      world,
      i,
      {
        latencyMs,
        lostRequestRate: isFaulty ? lostRequestRate : 0,
        lostReplyRate: isFaulty ? lostReplyRate : 0,
        timeoutMs: options.storeTimeoutMs ?? 1_000,
        faultsUntil,
        partitions: plan.partitions.filter((p) => p.node === i).map((p) => [p.from, p.to]),
      },
      plan.drift[i] ?? 0,
      plan.skew[i] ?? 0,
      counters,
    );
  });
  // Nodes come up within the first 500 ms, in an order drawn from the seed.
  for (const node of sims) time.at((seed * 7919 + node.index * 104_729) % 500, () => node.boot(false));
  for (const p of plan.partitions) {
    time.at(p.from, () => history.line(sims[p.node]!.label, `PARTITION until ${(p.to / 1000).toFixed(3)}s`));
    time.at(p.to, () => history.line(sims[p.node]!.label, 'partition healed'));
  }
  let crashes = 0;
  for (const c of plan.crashes) {
    time.at(c.at, () => {
      const node = sims[c.node]!;
      if (!node.up) return;
      crashes++;
      node.crash();
      time.at(c.at + c.downMs, () => node.boot(c.newId));
    });
  }
  await time.run(durationMs);
  for (const node of sims) node.halt();

  // A fire time this close to its schedule's removal (or re-upsert) may be claimed or not.
  const schedules = expectSchedules(versions, [WARMUP_MS, faultsUntil], durationMs, 2 * pollMs + 2_000);
  // A backfill may run a schedule's fire times from before its upsert (checker-backfills.ts judges them).
  for (const b of backfills)
    for (const f of b.fireTimes) schedules.find((s) => s.id === b.scheduleId)?.allowed.add(f);
  // A schedule removed after a backfill drops its queued runs: its fire times may not run.
  const removedAfter = (id: string, t: number) =>
    versions.some((v) => v.input.id === id && v.removed && v.to > t);
  const checked: CheckedJob[] = options.jobs.map((job, i) => {
    const spec = specs[i]!;
    const jobBackfills = expectBackfills(
      backfills,
      job.name,
      (b) =>
        b.at <= faultsUntil &&
        !pausedAfter(pauses, job.name, b.scheduleId, faultsUntil) &&
        (b.scheduleId === undefined || !removedAfter(b.scheduleId, b.at)),
    );
    const fireTimes: number[] = [];
    for (let after = EPOCH + WARMUP_MS - 1; spec.trigger; ) {
      const next = nextFireTimes(spec.trigger, after, 100).filter((t) => t <= EPOCH + faultsUntil);
      fireTimes.push(...next);
      if (next.length < 100) break;
      after = next.at(-1)!;
    }
    return {
      name: job.name,
      fireTimes,
      shards: spec.shards ? Array.from({ length: spec.shards.count }, (_, s) => s) : [undefined],
      schedules: schedules.filter((s) => s.job === job.name),
      ...pauseJudges(pauses, job.name, spec.misfireThresholdMs, faultsUntil),
      ...(spec.jitter &&
        spec.trigger && {
          startOf: (fireTime: number) =>
            startOfFire(spec.jitter, spec.trigger!, job.name, undefined, fireTime),
        }),
      backfills: jobBackfills,
      // An `excluded` skip of the job's own trigger or of a schedule is borne out by its list.
      excluded: (scheduleId: string | undefined, fireTime: number) => {
        const lists =
          scheduleId === undefined
            ? spec.exclude === undefined
              ? []
              : [spec.exclude]
            : (schedules.find((s) => s.id === scheduleId)?.excludes ?? []);
        return excludedBy(lists, fireTime, calendars);
      },
      removedAfter: (scheduleId: string | undefined, fireTime: number, by?: number) =>
        versions.some(
          (v) =>
            v.job === job.name &&
            v.input.id === scheduleId &&
            EPOCH + v.from <= fireTime &&
            EPOCH + v.to > fireTime &&
            v.to !== Number.POSITIVE_INFINITY &&
            (by === undefined || EPOCH + v.to <= by),
        ),
      // A lease more: a takeover whose reply is lost holds the page for a lease without knowing
      // (slow machine, the fault mix, seed 67: a page's runs crashed at 17.9 s, its takeover at
      // 21.7 s lost its reply, the next came at 25.1 s — after one of their schedules was removed).
      recoverWithinMs: recoveryReach + longestLease + 3_000,
      overlap: spec.overlap,
      mustFinish: spec.recover && !job.handler && !job.failRate && spec.timeoutMs === undefined,
      finishBy: durationMs - recoveryReach,
    };
  });
  const ignored = new Set(options.ignore ?? []);
  // Cut short: what was due after it was never given a chance (no liveness verdict).
  const stuck: Violation[] =
    time.stuckAt === undefined
      ? []
      : [
          {
            kind: 'stuck',
            occ: '(virtual time)',
            message: `time stopped advancing at ${(time.stuckAt / 1000).toFixed(3)}s: ${MAX_TIMERS_AT_ONE_INSTANT} timers in a row fired at that instant — a loop that sleeps 0 ms without waiting for anything (in production, a busy loop); the run was cut short there`,
          },
        ];
  const violations = [...stuck, ...check(history, checked, healthy > 0 && stuck.length === 0)].filter(
    (v) => !ignored.has(v.kind),
  );
  return {
    ok: violations.length === 0,
    seed,
    violations,
    trace: history.trace,
    plan,
    stats: {
      virtualMs: durationMs,
      wallMs: Math.round(performance.now() - wallStart),
      steps: time.fired,
      ...counters,
      crashes,
      partitions: plan.partitions.length,
      runs: history.invocations.length,
      succeeded: history.outcomes.filter((o) => o.kind === 'succeeded').length,
      pageClaims: history.pages.claims,
      pageMoves: history.pages.moved,
      pageTakeovers: history.pages.takeovers,
      pageRuns: history.invocations.filter((inv) => history.pageTokens.has(inv.token)).length,
    },
  };
}
