/**
 * Scheduler node processes (test/fixtures/clock-node.ts) whose wall clock libfaketime moves while
 * their monotonic clock stays true, and the helpers the clock and skip tests drive them with.
 *
 * libfaketime is preloaded (`LD_PRELOAD`) into the child only and fakes `clock_gettime`, which
 * V8's `Date.now()` reads. `FAKETIME_DONT_FAKE_MONOTONIC=1` keeps CLOCK_MONOTONIC real, as on a
 * host whose NTP is wrong or steps: without it libfaketime moves CLOCK_MONOTONIC too (Node's
 * `performance.now()`, timers, `process.hrtime`), which no real clock fault does.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { spawnTsx, type TsxChild } from './child.js';
import { until } from './scheduler-suite.js';

export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
export const hasFaketime = existsSync(LIBFAKETIME);
if (!hasFaketime && process.env.CI === 'true')
  throw new Error(`CI=true and ${LIBFAKETIME} is missing: apt-get install faketime`);

const NODE_SCRIPT = fileURLToPath(new URL('../fixtures/clock-node.ts', import.meta.url));

/** A JSON line a clock node prints (see test/fixtures/clock-node.ts). */
export interface ClockLine {
  event: string;
  node?: string;
  fireTime?: number;
  shard?: number | null;
  token?: number;
  attempt?: number;
  storeNow?: number;
  aborted?: boolean;
  reason?: string;
  wallMinusStore?: number;
}

export const parseLines = (child: TsxChild): ClockLine[] =>
  child.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));

/** The child's environment for a wall clock set by libfaketime's `settings` (FAKETIME, …). */
export function fakeTimeEnv(settings: Record<string, string>): Record<string, string> {
  return { LD_PRELOAD: LIBFAKETIME, FAKETIME_DONT_FAKE_MONOTONIC: '1', ...settings };
}

/** A wall clock `ms` ahead of (or, negative, behind) the true one; none for 0. */
export function skewEnv(ms: number): Record<string, string> {
  return ms === 0 ? {} : fakeTimeEnv({ FAKETIME: `${ms > 0 ? '+' : ''}${ms / 1000}s` });
}

export function startClockNode(
  url: string,
  prefix: string,
  node: string,
  job: string,
  mode: 'skew' | 'step' | 'overlap',
  env: Record<string, string>,
): TsxChild {
  return spawnTsx(NODE_SCRIPT, [url, prefix, node, job, mode], undefined, { env });
}

/** The first line `match` accepts, waiting for it (throws if the node exits first). */
export async function waitLine(
  child: TsxChild,
  match: (l: ClockLine) => boolean,
  what: string,
  ms = 15_000,
): Promise<ClockLine> {
  await until(() => parseLines(child).some(match) || child.process.exitCode !== null, ms, what);
  const line = parseLines(child).find(match);
  if (!line) throw new Error(`${what}: the node exited (${child.process.exitCode}): ${child.stderr()}`);
  return line;
}

/** Stops every node with a `stop` line and expects each to exit 0 within 10 s. */
export async function stopAll(children: TsxChild[]): Promise<void> {
  for (const c of children) if (c.process.exitCode === null) c.process.stdin!.end('stop\n');
  const codes = await Promise.all(
    children.map((c) =>
      Promise.race([c.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 10_000))]),
    ),
  );
  for (const c of children) if (c.process.exitCode === null) c.process.kill('SIGKILL');
  expect(codes, children.map((c) => c.stderr()).join('\n')).toEqual(children.map(() => 0));
}
