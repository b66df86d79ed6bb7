import { invalidArgument } from '../../core/errors.js';
import { type JobOptions, jobSpec } from '../../scheduler/job-options.js';
import { methodOf } from './method.js';
import { CLUSTER_JOB_METADATA } from './tokens.js';

/** What `@ClusterJob` records on the method; read by discovery at bootstrap. */
export interface ClusterJobMetadata {
  name: string;
  options: JobOptions;
  /** `Class.method`, for messages. */
  where: string;
}

/**
 * Defines the method as a job of OncelyModule's scheduler (`scheduler.define(name, options,
 * handler)`, `this` bound to the provider instance): each occurrence runs on one instance of the
 * fleet, with oncely's overlap, misfire, retry and recovery rules. The method gets the
 * `JobContext` (`fireTime`, `token`, `signal`, …). Options are checked here, at class definition.
 *
 * @example
 * @ClusterJob('sync-inventory', { every: '30s', timeout: '25s' })
 * async sync(ctx: JobContext) { await this.inventory.sync({ fencingToken: ctx.token, signal: ctx.signal }); }
 */
export function ClusterJob(name: string, options: JobOptions = {}): MethodDecorator {
  jobSpec(name, options);
  const frozen: JobOptions = { ...options };
  return (target, key, descriptor) => {
    const fn = methodOf('@ClusterJob', target, key, descriptor);
    const where = `${(target as { constructor: { name: string } }).constructor.name}.${String(key)}`;
    if (Reflect.hasOwnMetadata(CLUSTER_JOB_METADATA, fn))
      throw invalidArgument(`@ClusterJob on ${where}: applied twice; a method is one job`);
    const metadata: ClusterJobMetadata = { name, options: frozen, where };
    Reflect.defineMetadata(CLUSTER_JOB_METADATA, metadata, fn);
  };
}

/** The `@ClusterJob` declaration of the method `fn`, or `undefined`. */
export function clusterJobOf(fn: object): ClusterJobMetadata | undefined {
  return Reflect.getMetadata(CLUSTER_JOB_METADATA, fn) as ClusterJobMetadata | undefined;
}
