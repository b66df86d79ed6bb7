import type {
  BeforeApplicationShutdown,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import type { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { discover } from './discovery.js';
import type { OncelyConnection } from './options.js';

/**
 * The module's lifecycle, in Nest's hook order:
 * - `onModuleInit`: discover `@Once` / `@ClusterJob` methods (every provider exists by then, and
 *   no @nestjs/schedule timer has started: they start in `onApplicationBootstrap`).
 * - `onApplicationBootstrap`: start the scheduler.
 * - `beforeApplicationShutdown`: refuse new `@Once` runs, stop the scheduler (it stops claiming
 *   and drains its running jobs, up to `stopTimeout`). @nestjs/schedule clears its timers in the
 *   same phase.
 * - `onApplicationShutdown`: wait for `@Once` runs still in flight (up to `stopTimeout`), then
 *   close the store if the module opened it — so no run loses its store mid-release.
 * A failed bootstrap (a bad decorator, say) closes a store the module opened at once: Nest calls
 * no shutdown hook for an application that never finished starting.
 */
export class OncelyLifecycle
  implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown
{
  private stopped = false;

  constructor(
    private readonly connection: OncelyConnection,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  async onModuleInit(): Promise<void> {
    try {
      const found = discover(this.discovery, this.scanner, this.connection);
      this.connection.logger.debug(
        `oncely: ${found.once.length} @Once method(s), ${found.jobs.length} @ClusterJob job(s) on ${this.connection.scheduler.node}`,
      );
    } catch (err) {
      await this.closeStore();
      throw err;
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    try {
      await this.connection.scheduler.start();
    } catch (err) {
      await this.closeStore();
      throw err;
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  async onApplicationShutdown(): Promise<void> {
    // Also reached without beforeApplicationShutdown when a caller invokes only this hook.
    await this.stop();
    const drained = await this.connection.once.drain(this.connection.stopTimeoutMs);
    if (!drained) {
      this.connection.logger.warn(
        `oncely: @Once runs still going after stopTimeout (${this.connection.stopTimeoutMs} ms); closing anyway (their leases expire by themselves)`,
      );
    }
    await this.closeStore();
  }

  private async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.connection.once.close();
    await this.connection.scheduler.stop();
  }

  private async closeStore(): Promise<void> {
    if (this.connection.ownsStore) await this.connection.store.close();
  }
}
