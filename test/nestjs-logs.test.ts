/**
 * oncely/nestjs with Nest's own logger: one line per @ClusterJob run at `debug`, warnings and
 * errors at their levels, no object dumps (`Object(8) {…}`), durations in whole milliseconds.
 * Nest's ConsoleLogger prints what it is given; its output is captured where it writes it.
 */
import 'reflect-metadata';
import { ConsoleLogger, Injectable, Logger, Module, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Scheduler } from '../src/index.js';
import { ClusterJob, ONCELY_SCHEDULER, OncelyModule } from '../src/integrations/nestjs/index.js';
import { testPrefix } from './harness/backends.js';

type App = Awaited<ReturnType<typeof NestFactory.createApplicationContext>>;
const apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close().catch(() => {})));
  vi.restoreAllMocks();
});

function decorate(cls: Type, key: string, ...decorators: MethodDecorator[]): void {
  const proto = cls.prototype as object;
  const descriptor = Reflect.decorate(decorators, proto, key, Object.getOwnPropertyDescriptor(proto, key));
  Object.defineProperty(proto, key, descriptor as PropertyDescriptor);
}

/** Everything Nest's ConsoleLogger writes to stdout and stderr, line by line. */
function captureNest(): string[] {
  const lines: string[] = [];
  const keep = (chunk: unknown) => {
    lines.push(
      ...String(chunk)
        .split('\n')
        .filter((l) => l !== ''),
    );
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(keep as never);
  vi.spyOn(process.stderr, 'write').mockImplementation(keep as never);
  return lines;
}

describe('oncely/nestjs logs through Nest’s Logger', () => {
  it.each([
    ['new Logger("oncely")', (): Logger | undefined => new Logger('oncely'), 1],
    ['a ConsoleLogger', (): ConsoleLogger | undefined => new ConsoleLogger('oncely', { colors: false }), 1],
    ['no logger (Nest’s Logger, warnings and errors only)', (): Logger | undefined => undefined, 0],
  ] as const)('%s: one debug line per run, a failed run one warning with its error, no object dumps', async (_what, make, okLines) => {
    class Jobs {
      ok(): void {}
      bad(): void {
        throw new Error('upstream said 503');
      }
    }
    Injectable()(Jobs);
    decorate(Jobs, 'ok', ClusterJob('nest-ok', {}));
    decorate(Jobs, 'bad', ClusterJob('nest-bad', {}));
    const logger = make();
    class AppModule {}
    Module({
      imports: [
        OncelyModule.forRoot({
          storeUrl: `memory:${testPrefix('nestlog')}`,
          node: 'n1',
          ...(logger !== undefined && { logger }),
        }),
      ],
      providers: [Jobs],
    })(AppModule);
    const app = await NestFactory.createApplicationContext(AppModule, {
      logger: new ConsoleLogger({ colors: false, logLevels: ['debug', 'verbose', 'log', 'warn', 'error'] }),
      abortOnError: false,
    });
    apps.push(app);
    const scheduler = app.get<Scheduler>(ONCELY_SCHEDULER);
    const lines = captureNest();
    const done = new Promise((resolve) => scheduler.once('succeeded', resolve));
    await scheduler.trigger('nest-ok');
    await done;
    const failed = new Promise((resolve) => scheduler.once('failed', resolve));
    await scheduler.trigger('nest-bad');
    await failed;
    await new Promise((r) => setTimeout(r, 50));
    vi.restoreAllMocks();

    const about = (job: string) => lines.filter((l) => l.includes(job));
    const ok = about('nest-ok');
    expect(ok, lines.join('\n')).toHaveLength(okLines);
    if (okLines > 0)
      expect(ok[0]).toMatch(
        / DEBUG \[oncely\] oncely: nest-ok succeeded · job=nest-ok .*durationMs=\d+( |$)/,
      );
    const bad = about('nest-bad');
    expect(bad, lines.join('\n')).toHaveLength(1);
    expect(bad[0]).toMatch(/ WARN \[oncely\] oncely: nest-bad failed · job=nest-bad .*upstream said 503/);
    expect(lines.join('\n')).not.toMatch(/Object\(\d+\)|\{$/m);
    expect(lines.join('\n')).not.toMatch(/durationMs: /);
  });
});
