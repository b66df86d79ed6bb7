import type { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { invalidArgument } from '../../core/errors.js';
import type { JobContext } from '../../scheduler/types.js';
import { clusterJobOf } from './cluster-job.js';
import { hasNestSchedule, nestScheduleOf } from './fire-time.js';
import type { Method } from './method.js';
import { onceMetadataOf, onceSpec } from './once.js';
import type { OncelyConnection } from './options.js';

/** What discovery found, for the bootstrap log line. */
export interface Discovered {
  /** `Class.method` of each bound `@Once` method. */
  once: string[];
  /** Name of each job defined from `@ClusterJob`. */
  jobs: string[];
}

type InstanceWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/**
 * Scans every provider and controller instance for `@Once` and `@ClusterJob` methods: binds each
 * `@Once` method of an instance to this application's store (reading its @nestjs/schedule
 * schedule now, when every decorator has run), and defines each `@ClusterJob` on the scheduler
 * with `this` bound to the instance. Bad combinations are `INVALID_ARGUMENT` naming the method.
 */
export function discover(
  discovery: DiscoveryService,
  scanner: MetadataScanner,
  connection: OncelyConnection,
): Discovered {
  const found: Discovered = { once: [], jobs: [] };
  // A provider exported or aliased (useExisting) shows up in several wrappers: one instance, one scan.
  const seen = new Set<object>();
  for (const wrapper of [...discovery.getProviders(), ...discovery.getControllers()]) {
    const instance: unknown = wrapper.instance;
    if (typeof instance !== 'object' || instance === null || seen.has(instance)) continue;
    const prototype: unknown = Object.getPrototypeOf(instance);
    if (typeof prototype !== 'object' || prototype === null) continue;
    seen.add(instance);
    for (const key of scanner.getAllMethodNames(prototype)) {
      const fn: unknown = (instance as Record<string, unknown>)[key];
      if (typeof fn === 'function') scanMethod(wrapper, instance, fn as Method, connection, found);
    }
  }
  return found;
}

function scanMethod(
  wrapper: InstanceWrapper,
  instance: object,
  fn: Method,
  connection: OncelyConnection,
  found: Discovered,
): void {
  const once = onceMetadataOf(fn);
  const job = clusterJobOf(fn);
  if (!once && !job) return;
  if (once && job) {
    throw invalidArgument(
      `${once.where}: @Once and @ClusterJob on one method; use @ClusterJob alone (it runs once per fire time on the oncely scheduler) or @Cron/@Interval/@Timeout with @Once`,
    );
  }
  const isStatic = wrapper.isDependencyTreeStatic();
  if (job) {
    if (!isStatic) {
      throw invalidArgument(
        `@ClusterJob on ${job.where}: the provider is request-scoped or transient (or depends on one); jobs need a singleton provider`,
      );
    }
    if (hasNestSchedule(fn)) {
      throw invalidArgument(
        `@ClusterJob on ${job.where}: the method also has @Cron/@Interval/@Timeout, which would run it on every instance's own timer too; keep only @ClusterJob (its options take cron or every)`,
      );
    }
    connection.scheduler.define(job.name, job.options, (ctx: JobContext) => fn.call(instance, ctx));
    found.jobs.push(job.name);
    return;
  }
  if (once) {
    const schedule = nestScheduleOf(fn, once.where);
    if (!schedule) {
      throw invalidArgument(
        `@Once on ${once.where}: the method has no @Cron(), @Interval() or @Timeout() from @nestjs/schedule, so there is no fire time to run once; add one, use @ClusterJob, or call withLock() for work that is not scheduled`,
      );
    }
    // @nestjs/schedule skips non-static providers (with a warning of its own): nothing to bind.
    if (!isStatic) return;
    connection.once.bind(instance, fn, onceSpec(once), schedule);
    found.once.push(once.where);
  }
}
