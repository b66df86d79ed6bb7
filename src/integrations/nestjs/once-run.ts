import { AsyncLocalStorage } from 'node:async_hooks';
import { type Clock, systemClock } from '../../core/clock.js';
import { OncelyError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { KeepAlive, type Renewable } from '../../lock/keep-alive.js';
import { LeaseLock } from '../../lock/lease-lock.js';
import { tryLock } from '../../lock/try-lock.js';
import type { Lock } from '../../lock/types.js';
import { esc, timeKey } from '../../scheduler/keys.js';
import type { Store } from '../../store/types.js';
import type { NestSchedule } from './fire-time.js';
import type { Method } from './method.js';

/** A validated `@Once` declaration. */
export interface OnceSpec {
  /** Lock name: the job's lock is `lock:<name>`, each fire time `once|<name>|<fire time>`. */
  name: string;
  /** `Class.method`, for messages. */
  where: string;
  atMostMs: number;
  atLeastMs: number;
}

/** What a `@Once` run gives the method through {@link onceContext}. */
export interface OnceContext {
  /** The lock name. */
  name: string;
  /** The fire time this run is for; `undefined` for `@Timeout`. */
  fireTime: Date | undefined;
  /** Fencing token of the job's lock: higher than any earlier holder's. Pass it to what you write. */
  token: number;
  /** Aborted (reason: `OncelyError` `LOCK_LOST`) before the lock could expire when it cannot be kept. */
  signal: AbortSignal;
}

const current = new AsyncLocalStorage<OnceContext>();

/**
 * Inside a `@Once` method (and whatever it awaits): the fire time, fencing token and abort signal
 * of the run; `undefined` anywhere else.
 *
 * @example
 * @Cron('0 * * * *') @Once({ lockAtMostFor: '10m' })
 * async hourly() { const { token, signal } = onceContext()!; await this.billing.charge({ token, signal }); }
 */
export function onceContext(): OnceContext | undefined {
  return current.getStore();
}

/** The store key of one occurrence of a `@Once` job (escaped parts, as the scheduler's keys). */
export function occurrenceKey(name: string, fireTime: number | undefined): string {
  return `once|${esc(name)}|${fireTime === undefined ? 'timeout' : timeKey(fireTime)}`;
}

/** One `@Once` method of one provider instance, as bound at bootstrap. */
interface Binding {
  spec: OnceSpec;
  schedule: NestSchedule;
  runtime: OnceRuntime;
}

/** Provider instance -> its `@Once` methods (the wrapper functions) -> binding. */
const bindings = new WeakMap<object, Map<object, Binding>>();

/**
 * Runs `@Once` methods for one application: claims the occurrence, then the job's lock, runs, and
 * keeps track of runs in flight so shutdown can wait for them before the store closes.
 */
export class OnceRuntime {
  private readonly inFlight = new Set<Promise<unknown>>();
  private closing = false;

  constructor(
    private readonly store: Store,
    private readonly owner: string,
    private readonly logger: Logger,
    private readonly clock: Clock = systemClock,
  ) {}

  bind(instance: object, method: object, spec: OnceSpec, schedule: NestSchedule): void {
    let methods = bindings.get(instance);
    if (!methods) {
      methods = new Map();
      bindings.set(instance, methods);
    }
    methods.set(method, { spec, schedule, runtime: this });
  }

  /** No new runs from now on (ticks that still arrive are dropped). */
  close(): void {
    this.closing = true;
  }

  /** Waits for runs in flight, at most `timeoutMs`; `false` if some were still running then. */
  async drain(timeoutMs: number): Promise<boolean> {
    if (this.inFlight.size === 0) return true;
    const stop = new AbortController();
    const settled = Promise.allSettled([...this.inFlight]).then(() => true);
    const late = this.clock.sleep(timeoutMs, stop.signal).then(() => false);
    const done = await Promise.race([settled, late]);
    stop.abort();
    return done;
  }

  run(binding: Binding, instance: object, original: Method, args: unknown[]): Promise<unknown> {
    if (this.closing) {
      this.logger.debug(`@Once ${binding.spec.where}: tick after shutdown began, not run`);
      return Promise.resolve(undefined);
    }
    const run = this.claimAndRun(binding, instance, original, args);
    this.inFlight.add(run);
    const forget = () => this.inFlight.delete(run);
    run.then(forget, forget);
    return run;
  }

  /**
   * Claims the occurrence first and the job's lock only once the occurrence is ours: a replica
   * whose tick for an already claimed fire time comes late then never holds the job's lock, even
   * briefly, so it cannot make the next fire time's winner skip.
   *
   * - occurrence refused: another replica has (or had) this fire time — not run here.
   * - occurrence granted, lock refused: the previous run still holds the job's lock (or its
   *   lockAtLeastFor): this fire time is skipped everywhere, as ShedLock skips it.
   * - both granted: run; afterwards the lock is released (held until lockAtLeastFor after it was
   *   taken) and the occurrence stays claimed until lockAtMostFor after its claim, so a replica
   *   whose tick for it comes up to lockAtMostFor late is refused.
   */
  private async claimAndRun(
    binding: Binding,
    instance: object,
    original: Method,
    args: unknown[],
  ): Promise<unknown> {
    const { spec, schedule } = binding;
    const fireTime = schedule.fireTime(Date.now());
    const key = occurrenceKey(spec.name, fireTime);
    const sentAt = this.clock.monotonic();
    const [lease] = await this.store.acquire([{ key, owner: this.owner, leaseMs: spec.atMostMs }]);
    const at = fireTime === undefined ? 'its start-up timeout' : new Date(fireTime).toISOString();
    if (!lease) {
      this.logger.debug(`@Once ${spec.where}: ${at} is claimed by another instance`);
      return undefined;
    }
    const occurrence = new LeaseLock(
      this.store,
      { name: key, key, owner: this.owner, atMostMs: spec.atMostMs, atLeastMs: spec.atMostMs },
      lease,
      sentAt,
      this.clock,
    );
    // A failed lock request leaves the occurrence claimed until its lease ends: this fire time is
    // then not run anywhere (at most once), rather than possibly twice.
    const lock = await tryLock(
      this.store,
      { name: spec.name, lockAtMostFor: spec.atMostMs, lockAtLeastFor: spec.atLeastMs, owner: this.owner },
      this.clock,
    );
    if (!lock) {
      this.logger.info(
        `@Once ${spec.where}: ${at} skipped: the previous run still holds lock "${spec.name}"`,
      );
      await occurrence.release().catch((err: unknown) => this.releaseFailed(spec, err));
      return undefined;
    }
    const keeper = new KeepAlive(renewBoth(spec.name, occurrence, lock), {
      leaseMs: spec.atMostMs,
      renew: true,
      clock: this.clock,
      logger: this.logger,
    });
    const context: OnceContext = {
      name: spec.name,
      fireTime: fireTime === undefined ? undefined : new Date(fireTime),
      token: lock.token,
      signal: keeper.signal,
    };
    try {
      return await current.run(context, () => original.apply(instance, args));
    } finally {
      await keeper.stop();
      await Promise.all([
        lock.release().catch((err: unknown) => this.releaseFailed(spec, err)),
        occurrence.release().catch((err: unknown) => this.releaseFailed(spec, err)),
      ]);
    }
  }

  private releaseFailed(spec: OnceSpec, err: unknown): void {
    // The leases end by themselves at their expiry; nothing runs twice because of this.
    this.logger.warn(`@Once ${spec.where}: release failed`, err);
  }
}

/** The occurrence and the job's lock, renewed together by one keep-alive. */
function renewBoth(name: string, occurrence: LeaseLock, lock: Lock): Renewable {
  return {
    name,
    get localDeadline() {
      return Math.min(occurrence.localDeadline, lock.localDeadline);
    },
    async extend(leaseMs) {
      const [a, b] = await Promise.all([occurrence.extend(leaseMs), lock.extend(leaseMs)]);
      return a && b;
    },
  };
}

/**
 * What the `@Once` wrapper calls: runs `original` under the binding OncelyModule made for
 * `instance` at bootstrap. A call on an instance it did not bind is refused rather than run
 * unguarded.
 */
export function runOnceBound(
  instance: unknown,
  wrapper: object,
  original: Method,
  args: unknown[],
  where: string,
): Promise<unknown> {
  const binding =
    typeof instance === 'object' && instance !== null ? bindings.get(instance)?.get(wrapper) : undefined;
  if (!binding) {
    return Promise.reject(
      new OncelyError(
        'INVALID_ARGUMENT',
        `@Once method ${where} was called on an instance OncelyModule has not set up: import OncelyModule.forRoot(…) (or forRootAsync) in the application, and keep the provider a singleton (not request-scoped or transient)`,
      ),
    );
  }
  return binding.runtime.run(binding, instance as object, original, args);
}
