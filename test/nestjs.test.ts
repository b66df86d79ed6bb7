/**
 * oncely/nestjs in one process: real Nest application contexts (@nestjs/core 12) on memory stores.
 * Test files are compiled without `experimentalDecorators`, so decorators are applied the way
 * TypeScript's legacy emit applies them: `Reflect.decorate` (bottom-up, descriptor threaded
 * through), which is what `@A @B method() {}` compiles to.
 */
import 'reflect-metadata';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Injectable, Module, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, Interval, ScheduleModule, SchedulerRegistry, Timeout } from '@nestjs/schedule';
import { afterEach, describe, expect, it } from 'vitest';
import { type JobContext, OncelyError, openStore, Scheduler, type Store } from '../src/index.js';
import {
  ClusterJob,
  ONCELY_SCHEDULER,
  ONCELY_STORE,
  Once,
  OncelyModule,
  type OncelyModuleOptions,
  onceContext,
} from '../src/integrations/nestjs/index.js';
import { testPrefix } from './harness/backends.js';

type App = Awaited<ReturnType<typeof NestFactory.createApplicationContext>>;
const apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close().catch(() => {})));
});

/** `@decorators[0] … @decorators[n-1] key() {}` on `cls`, as TypeScript's legacy decorators emit it. */
function decorate(cls: Type, key: string, ...decorators: MethodDecorator[]): void {
  const proto = cls.prototype as object;
  const descriptor = Reflect.decorate(decorators, proto, key, Object.getOwnPropertyDescriptor(proto, key));
  Object.defineProperty(proto, key, descriptor as PropertyDescriptor);
}

/** An application of `providers` with OncelyModule (and @nestjs/schedule's module when asked). */
async function start(
  providers: Type[],
  options: OncelyModuleOptions,
  { schedule = false } = {},
): Promise<App> {
  class AppModule {}
  Module({
    imports: [...(schedule ? [ScheduleModule.forRoot()] : []), OncelyModule.forRoot(options)],
    providers,
  })(AppModule);
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false });
  apps.push(app);
  return app;
}

async function rejection(promise: Promise<unknown>): Promise<OncelyError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OncelyError);
  return err as OncelyError;
}

/** Waits until the start of the next `ms`-long slot of the epoch grid (plus a few ms). */
async function nextSlot(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms - (Date.now() % ms) + 5));
}

describe('OncelyModule', () => {
  it('forRootAsync: options from an injected provider of an imported module; store and scheduler injectable; @ClusterJob runs with `this` bound', async () => {
    const CONFIG = Symbol('config');
    const space = `memory:${testPrefix('nestasync')}`;
    class ConfigModule {}
    Module({
      providers: [{ provide: CONFIG, useValue: { url: space, node: 'async-node' } }],
      exports: [CONFIG],
    })(ConfigModule);

    const ran: { self: unknown; ctx: JobContext }[] = [];
    class Reports {
      readonly tag = 'reports';
      nightly(ctx: JobContext): void {
        ran.push({ self: this, ctx });
      }
    }
    Injectable()(Reports);
    decorate(Reports, 'nightly', ClusterJob('nightly-report', { cron: '0 3 * * *' }));

    const SEEN = Symbol('seen');
    class AppModule {}
    Module({
      imports: [
        OncelyModule.forRootAsync({
          imports: [ConfigModule],
          inject: [CONFIG],
          useFactory: async (config: { url: string; node: string }) => ({
            storeUrl: config.url,
            node: config.node,
          }),
        }),
      ],
      providers: [
        Reports,
        {
          provide: SEEN,
          useFactory: (store: Store, scheduler: Scheduler, byClass: Scheduler) => ({
            store,
            scheduler,
            byClass,
          }),
          inject: [ONCELY_STORE, ONCELY_SCHEDULER, Scheduler],
        },
      ],
    })(AppModule);
    const app = await NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false });
    apps.push(app);

    const seen = app.get<{ store: Store; scheduler: Scheduler; byClass: Scheduler }>(SEEN);
    expect(seen.store.kind).toBe('memory');
    expect(seen.scheduler).toBeInstanceOf(Scheduler);
    expect(seen.byClass).toBe(seen.scheduler);
    expect(seen.scheduler.node).toBe('async-node');
    // Started on bootstrap, with the discovered job defined and recorded in the store.
    const jobs = await seen.scheduler.jobs();
    expect(jobs.map((j) => j.name)).toEqual(['nightly-report']);
    expect(jobs[0]!.trigger).toEqual({ cron: '0 3 * * *' });
    const succeeded = new Promise((resolve) => seen.scheduler.on('succeeded', resolve));
    await seen.scheduler.trigger('nightly-report');
    await succeeded;
    expect(ran).toHaveLength(1);
    expect(ran[0]!.self).toBe(app.get(Reports));
    expect(ran[0]!.ctx.job).toBe('nightly-report');

    // The module opened the store from storeUrl, so closing the application closes it.
    await app.close();
    const closed = await rejection(seen.store.get('anything'));
    expect(closed.code).toBe('CLOSED');
  });

  it('leaves a store it was given open on shutdown, and refuses bad module options', async () => {
    const store = await openStore('memory:');
    const app = await start([], { store });
    await app.close();
    await expect(store.get('x')).resolves.toBeNull();
    await store.close();

    for (const bad of [{}, { store, storeUrl: 'memory:' }, { store, storeOptions: { prefix: 'p_' } }]) {
      let err: unknown;
      try {
        OncelyModule.forRoot(bad as OncelyModuleOptions);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(Object.keys(bad))).toBeInstanceOf(OncelyError);
      expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
    }
    // A factory's bad options fail the bootstrap, with the scheduler's own message.
    class AppModule {}
    Module({
      imports: [
        OncelyModule.forRootAsync({ useFactory: () => ({ storeUrl: 'memory:', concurency: 4 }) as never }),
      ],
    })(AppModule);
    const err = await rejection(
      NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false }),
    );
    expect(err.message).toMatch(/unknown scheduler option "concurency"/);
  });
});

describe('@Once and @ClusterJob validation', () => {
  function thrown(fn: () => unknown): OncelyError {
    let err: unknown;
    try {
      fn();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OncelyError);
    expect((err as OncelyError).code).toBe('INVALID_ARGUMENT');
    return err as OncelyError;
  }

  it('refuses bad decorator options at class definition', () => {
    expect(thrown(() => Once({} as never)).message).toMatch(/lockAtMostFor is required/);
    expect(thrown(() => Once({ lockAtMostFor: '1s', lockAtLeastFor: '2s' })).message).toMatch(
      /lockAtLeastFor \(2000 ms\) must not exceed lockAtMostFor \(1000 ms\)/,
    );
    expect(thrown(() => Once({ lockAtMostFor: '1s', ttl: 5 } as never)).message).toMatch(
      /unknown option "ttl"/,
    );
    expect(thrown(() => Once({ lockAtMostFor: 'soon' })).message).toMatch(
      /lockAtMostFor "soon" is not a duration/,
    );
    expect(thrown(() => Once({ name: '', lockAtMostFor: '1s' })).message).toMatch(/name must be a non-empty/);
    expect(thrown(() => ClusterJob('x', { cron: 'every day' })).message).toMatch(
      /cron "every day" is invalid/,
    );
    expect(thrown(() => ClusterJob('x', { every: '1s', ovrelap: 'skip' } as never)).message).toMatch(
      /ovrelap/,
    );

    class Svc {
      static tick(): void {}
      run(): void {}
    }
    expect(
      thrown(() => Once({ lockAtMostFor: '1s' })(Svc, 'tick', Object.getOwnPropertyDescriptor(Svc, 'tick')!))
        .message,
    ).toMatch(/static method Svc.tick/);
    expect(
      thrown(() => (Once({ lockAtMostFor: '1s' }) as PropertyDecorator)(Svc.prototype, 'field')).message,
    ).toMatch(/decorates methods only/);
    expect(() => decorate(Svc, 'run', Once({ lockAtMostFor: '1s' }), Once({ lockAtMostFor: '1s' }))).toThrow(
      /applied twice/,
    );
  });

  it('fails the bootstrap for @Once without a schedule, @ClusterJob with one, and both on one method', async () => {
    class NoSchedule {
      work(): void {}
    }
    Injectable()(NoSchedule);
    decorate(NoSchedule, 'work', Once({ lockAtMostFor: '1m' }));
    const noSchedule = await rejection(start([NoSchedule], { storeUrl: 'memory:' }));
    expect(noSchedule.code).toBe('INVALID_ARGUMENT');
    expect(noSchedule.message).toMatch(
      /@Once on NoSchedule.work: the method has no @Cron\(\), @Interval\(\) or @Timeout\(\)/,
    );

    class Twice {
      work(): void {}
    }
    Injectable()(Twice);
    decorate(Twice, 'work', Cron('* * * * *'), ClusterJob('work', { every: '1m' }));
    expect((await rejection(start([Twice], { storeUrl: 'memory:' }))).message).toMatch(
      /@ClusterJob on Twice.work: the method also has @Cron/,
    );

    class Both {
      work(): void {}
    }
    Injectable()(Both);
    decorate(Both, 'work', Once({ lockAtMostFor: '1m' }), ClusterJob('work', { every: '1m' }));
    expect((await rejection(start([Both], { storeUrl: 'memory:' }))).message).toMatch(
      /@Once and @ClusterJob on one method/,
    );

    // A cron pattern croner cannot read fails at bootstrap too, naming the method.
    class BadCron {
      work(): void {}
    }
    Injectable()(BadCron);
    decorate(BadCron, 'work', Cron('0 0 0 * * * * *'), Once({ lockAtMostFor: '1m' }));
    expect((await rejection(start([BadCron], { storeUrl: 'memory:' }))).message).toMatch(/BadCron.work/);
  });

  it('refuses to run a @Once method on an instance OncelyModule did not set up', async () => {
    class Loose {
      work(): string {
        return 'ran';
      }
    }
    decorate(Loose, 'work', Interval(1000), Once({ lockAtMostFor: '1m' }));
    const err = await rejection(new Loose().work() as unknown as Promise<unknown>);
    expect(err.message).toMatch(/OncelyModule has not set up/);
  });
});

describe('@Once runs', () => {
  it('keys by fire time: a tick for a fire time another instance already ran is refused however late it comes; both decorator orders reach @nestjs/schedule', async () => {
    const runs: { node: string; fireTime: Date | undefined }[] = [];
    // Two classes, the two decorator orders; both fire on 1 January 00:00:00 UTC only.
    class CronFirst {
      yearly(node: string): void {
        runs.push({ node, fireTime: onceContext()?.fireTime });
      }
    }
    class OnceFirst {
      yearly(node: string): void {
        runs.push({ node, fireTime: onceContext()?.fireTime });
      }
    }
    for (const cls of [CronFirst, OnceFirst]) Injectable()(cls);
    const cron = Cron('0 0 0 1 1 *', { name: 'yearly', timeZone: 'UTC' });
    decorate(CronFirst, 'yearly', cron, Once({ name: 'yearly', lockAtMostFor: '1m' }));
    decorate(OnceFirst, 'yearly', Once({ name: 'yearly', lockAtMostFor: '1m' }), cron);

    const space = `memory:${testPrefix('nestonce')}`;
    const a = await start([CronFirst], { storeUrl: space, node: 'a' }, { schedule: true });
    const b = await start([OnceFirst], { storeUrl: space, node: 'b' }, { schedule: true });
    // @nestjs/schedule found the cron on the wrapped method in both orders.
    expect([...a.get(SchedulerRegistry).getCronJobs().keys()]).toEqual(['yearly']);
    expect([...b.get(SchedulerRegistry).getCronJobs().keys()]).toEqual(['yearly']);

    await a.get(CronFirst).yearly('a');
    // Instance b's tick for the same fire time, after a's run has ended and released its lock:
    // keyed by name alone it would run again.
    await b.get(OnceFirst).yearly('b');
    await a.get(CronFirst).yearly('a');
    const thisYear = Date.UTC(new Date().getUTCFullYear(), 0, 1);
    expect(runs).toEqual([{ node: 'a', fireTime: new Date(thisYear) }]);
  });

  it('@Interval: one run per slot of the epoch grid; a fire time that comes while the previous run holds the lock is skipped', async () => {
    let running = 0;
    const runs: number[] = [];
    let release: () => void = () => {};
    class Poll {
      async poll(): Promise<void> {
        running++;
        runs.push(onceContext()!.fireTime!.getTime());
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        running--;
      }
    }
    Injectable()(Poll);
    decorate(Poll, 'poll', Interval(300), Once({ lockAtMostFor: '10s' }));
    const app = await start([Poll], { storeUrl: 'memory:' });
    const poll = app.get(Poll);

    await nextSlot(300);
    const first = poll.poll();
    await expect(poll.poll()).resolves.toBeUndefined(); // same slot: refused at once
    await nextSlot(300);
    await expect(poll.poll()).resolves.toBeUndefined(); // next slot, lock still held: skipped
    expect(running).toBe(1);
    release();
    await first;
    await nextSlot(300);
    const third = poll.poll();
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await third;
    expect(runs).toHaveLength(2);
    expect(runs[0]! % 300).toBe(0);
    // Two slots later at the least (the skipped slot never runs); 600 ms unless the machine stalled.
    expect(runs[1]! - runs[0]!).toBeGreaterThanOrEqual(600);
    expect((runs[1]! - runs[0]!) % 300).toBe(0);
  });

  it('@Timeout: one run per name (no fire time); shutdown waits for a run in flight before closing the store', async () => {
    const space = `memory:${testPrefix('nesttimeout')}`;
    let release: () => void = () => {};
    const contexts: unknown[] = [];
    class Warmup {
      async warm(): Promise<string> {
        contexts.push(onceContext()?.fireTime);
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return 'warmed';
      }
    }
    Injectable()(Warmup);
    decorate(Warmup, 'warm', Timeout(60_000), Once({ name: 'warmup', lockAtMostFor: '1m' }));
    const a = await start([Warmup], { storeUrl: space, node: 'a' });
    const b = await start([Warmup], { storeUrl: space, node: 'b' });
    const running = a.get(Warmup).warm();
    await expect(b.get(Warmup).warm()).resolves.toBeUndefined();
    expect(contexts).toEqual([undefined]);

    let closed = false;
    const closing = a.close().then(() => {
      closed = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(closed).toBe(false); // the run holds its leases on a store that is still open
    release();
    await expect(running).resolves.toBe('warmed');
    await closing;
    // a's run released its lock before a closed; the occurrence stays claimed for lockAtMostFor.
    const store = await openStore(space);
    expect(await store.inspect('lock:warmup')).toBeNull();
    expect((await store.inspect('once|warmup|timeout'))?.owner).toBe('a');
    await store.close();
  });
});

describe('packaging', () => {
  it('only src/integrations/nestjs imports Nest or reflect-metadata, and nothing else imports src/integrations/nestjs', () => {
    const src = fileURLToPath(new URL('../src', import.meta.url));
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (path !== join(src, 'integrations', 'nestjs')) walk(path);
        } else if (
          /(from |import |import\()'(@nestjs\/|reflect-metadata|[./]+\/nestjs\/)/.test(
            readFileSync(path, 'utf8'),
          )
        ) {
          offenders.push(relative(src, path));
        }
      }
    };
    walk(src);
    expect(offenders).toEqual([]);
  });
});
