/**
 * `oncely/nestjs`: NestJS integration. `OncelyModule` provides a store and a cluster scheduler;
 * `@Once()` makes a @nestjs/schedule `@Cron`/`@Interval`/`@Timeout` method run on one instance per
 * fire time; `@ClusterJob()` defines a method as a job of the oncely scheduler. Needs
 * @nestjs/common, @nestjs/core and reflect-metadata (and @nestjs/schedule for `@Once`).
 *
 * @module oncely/nestjs
 */
import 'reflect-metadata';

export { ClusterJob } from './cluster-job.js';
export { OncelyModule, type OncelyModuleAsyncOptions } from './module.js';
export { Once, type OnceOptions } from './once.js';
export { type OnceContext, onceContext } from './once-run.js';
export type { NestLoggerLike, OncelyModuleOptions } from './options.js';
export { ONCELY_SCHEDULER, ONCELY_STORE } from './tokens.js';
