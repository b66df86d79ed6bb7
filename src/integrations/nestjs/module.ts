import {
  type DynamicModule,
  type FactoryProvider,
  Module,
  type ModuleMetadata,
  type Provider,
} from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, MetadataScanner } from '@nestjs/core';
import { invalidArgument } from '../../core/errors.js';
import { Scheduler } from '../../scheduler/scheduler.js';
import { OncelyLifecycle } from './lifecycle.js';
import { checkModuleOptions, connect, type OncelyConnection, type OncelyModuleOptions } from './options.js';
import {
  ONCELY_CONNECTION,
  ONCELY_LIFECYCLE,
  ONCELY_MODULE_OPTIONS,
  ONCELY_SCHEDULER,
  ONCELY_STORE,
} from './tokens.js';

/** `OncelyModule.forRootAsync(…)`: options from a factory, with its injections and imports. */
export interface OncelyModuleAsyncOptions {
  /** Modules whose providers `inject` names (e.g. `ConfigModule`). */
  imports?: ModuleMetadata['imports'];
  /** Providers handed to `useFactory`, in order. */
  inject?: FactoryProvider['inject'];
  /** Returns the module's options (see {@link OncelyModuleOptions}) from the `inject`ed providers. */
  useFactory: (...args: never[]) => OncelyModuleOptions | Promise<OncelyModuleOptions>;
}

/**
 * A global module that provides an oncely store (`@Inject(ONCELY_STORE)`) and scheduler
 * (`Scheduler`, or `@Inject(ONCELY_SCHEDULER)`), runs `@ClusterJob` methods on that scheduler and
 * guards `@Once` methods. The scheduler starts on application bootstrap and stops on shutdown
 * (call `app.enableShutdownHooks()` so SIGTERM gets there); a store opened from `storeUrl` is
 * closed after it.
 *
 * @example
 * @Module({ imports: [ScheduleModule.forRoot(), OncelyModule.forRoot({ storeUrl: 'sqlite:./oncely.db' })] })
 * export class AppModule {}
 */
// biome-ignore lint/complexity/noStaticOnlyClass: a Nest module is a class; forRoot/forRootAsync are Nest's convention
export class OncelyModule {
  /** The module with options known up front. Throws `INVALID_ARGUMENT` unless exactly one of `store`, `storeUrl` is given. */
  static forRoot(options: OncelyModuleOptions): DynamicModule {
    checkModuleOptions(options);
    return build({ provide: ONCELY_MODULE_OPTIONS, useValue: options }, []);
  }

  /**
   * The module with options from a factory (e.g. read from `ConfigService`).
   *
   * @example
   * OncelyModule.forRootAsync({
   *   imports: [ConfigModule],
   *   inject: [ConfigService],
   *   useFactory: (config: ConfigService) => ({ storeUrl: config.getOrThrow('ONCELY_STORE') }),
   * })
   */
  static forRootAsync(options: OncelyModuleAsyncOptions): DynamicModule {
    if (options === null || typeof options !== 'object' || typeof options.useFactory !== 'function') {
      throw invalidArgument(
        'OncelyModule.forRootAsync needs { useFactory: (...injected) => options, inject?, imports? }',
      );
    }
    const factory: FactoryProvider = {
      provide: ONCELY_MODULE_OPTIONS,
      useFactory: options.useFactory as FactoryProvider['useFactory'],
      inject: options.inject ?? [],
    };
    return build(factory, options.imports ?? []);
  }
}
Module({})(OncelyModule);

function build(options: Provider, imports: NonNullable<ModuleMetadata['imports']>): DynamicModule {
  const providers: Provider[] = [
    options,
    { provide: ONCELY_CONNECTION, useFactory: connect, inject: [ONCELY_MODULE_OPTIONS] },
    { provide: ONCELY_STORE, useFactory: (c: OncelyConnection) => c.store, inject: [ONCELY_CONNECTION] },
    {
      provide: ONCELY_SCHEDULER,
      useFactory: (c: OncelyConnection) => c.scheduler,
      inject: [ONCELY_CONNECTION],
    },
    { provide: Scheduler, useExisting: ONCELY_SCHEDULER },
    {
      provide: ONCELY_LIFECYCLE,
      useFactory: (c: OncelyConnection, d: DiscoveryService, s: MetadataScanner) =>
        new OncelyLifecycle(c, d, s),
      inject: [ONCELY_CONNECTION, DiscoveryService, MetadataScanner],
    },
  ];
  return {
    module: OncelyModule,
    global: true,
    imports: [DiscoveryModule, ...imports],
    providers,
    exports: [ONCELY_STORE, ONCELY_SCHEDULER, Scheduler],
  };
}
