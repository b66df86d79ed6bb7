/**
 * Injection tokens and reflect-metadata keys of `oncely/nestjs`. Tokens are symbols, so no other
 * module's string token can shadow them.
 */

/** The oncely `Store` the module uses: `@Inject(ONCELY_STORE) store: Store`. */
export const ONCELY_STORE: unique symbol = Symbol('oncely:store');
/** The module's `Scheduler` (also injectable by its class, `Scheduler`). */
export const ONCELY_SCHEDULER: unique symbol = Symbol('oncely:scheduler');
/** The options given to `forRoot` / returned by `forRootAsync`'s factory. */
export const ONCELY_MODULE_OPTIONS: unique symbol = Symbol('oncely:module-options');
/** Internal: the opened store and scheduler, and whether the module owns the store. */
export const ONCELY_CONNECTION: unique symbol = Symbol('oncely:connection');
/** Internal: the provider whose lifecycle hooks discover, start and stop everything. */
export const ONCELY_LIFECYCLE: unique symbol = Symbol('oncely:lifecycle');

/** Metadata key of `@Once` on the method (its wrapper function). */
export const ONCE_METADATA = 'oncely:once';
/** Metadata key of `@ClusterJob` on the method. */
export const CLUSTER_JOB_METADATA = 'oncely:cluster-job';
