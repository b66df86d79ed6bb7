/**
 * Three `oncely run` processes share one store and one jobs file: every fire time of an `every: 1s`
 * job runs exactly once across them, also after one node is SIGKILLed, with no holes; the
 * inspection and control commands (`status`, `nodes`, `history`, `trigger`, `pause`, `resume`)
 * work against the same store while the nodes run; SIGTERM stops the survivors with exit 0.
 * Once on SQLite (a temp file), once on PostgreSQL (the harness's throwaway server). Runs the
 * built CLI (`npm run build` first).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/index.js';
import { keys } from '../src/scheduler/keys.js';
import { expectedOccurrences } from '../src/testing/index.js';
import { type CliProcess, requireBuiltCli, runCli, sleep, startCli, until } from './fixtures/cli/cli.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { expectHistoryHolds } from './harness/history.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-cluster-'));
beforeAll(() => requireBuiltCli());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const postgres = serverBackend('postgres');
if (postgres.skip)
  console.warn(`\n!!! SKIPPING the oncely CLI cluster test on PostgreSQL: ${postgres.skip}\n`);

/** Lines of a ledger file as they appear, with the (test-process) time each was first seen. */
class Ledger {
  readonly seen: { line: string; at: number }[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(readonly path: string) {
    this.timer = setInterval(() => this.read(), 20);
  }

  read(): void {
    if (!existsSync(this.path)) return;
    const lines = readFileSync(this.path, 'utf8').split('\n').slice(0, -1);
    const now = Date.now();
    for (const line of lines.slice(this.seen.length)) this.seen.push({ line, at: now });
  }

  stop(): void {
    clearInterval(this.timer);
    this.read();
  }

  get size(): number {
    return this.seen.length;
  }
}

interface Entry {
  job: string;
  fireTime: string;
  node: string;
  status: string;
  attempt: number;
  output?: string;
}

async function json<T>(args: string[]): Promise<T> {
  const r = await runCli([...args, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}

/** The fire times of `tick` queued or waiting behind its overlap gate in the store the CLI args name. */
async function pendingFireTimes(args: string[]): Promise<number[]> {
  const url = args[args.indexOf('--store') + 1]!;
  const at = args.indexOf('--prefix');
  const store = await openStore(url, at >= 0 ? { prefix: args[at + 1]! } : {});
  try {
    const records = await store.scan(keys.pendingPrefix('tick'), { limit: 100 });
    return records.map((r) => (JSON.parse(r.value) as { fireTime: number }).fireTime);
  } finally {
    await store.close();
  }
}

async function clusterScenario(label: string, store: string[]): Promise<void> {
  const work = mkdtempSync(join(dir, `${label}-`));
  const ledgerPath = join(work, 'ledger.txt');
  const manualPath = join(work, 'manual.txt');
  const jobsFile = join(work, 'jobs.yaml');
  writeFileSync(
    jobsFile,
    [
      'jobs:',
      '  - name: tick',
      '    every: 1s',
      // On a loaded 2-core test machine a claim may come late; up to 3 s late still counts as
      // on time (run), so a slow tick cannot turn into a skipped-misfire hole.
      '    misfireThreshold: 3s',
      '    command: echo "$ONCELY_JOB $ONCELY_FIRE_TIME $ONCELY_NODE $ONCELY_TOKEN $ONCELY_ATTEMPT" >> "$LEDGER" && echo "ran on $ONCELY_NODE"',
      '    env:',
      `      LEDGER: ${JSON.stringify(ledgerPath)}`,
      '  - name: manual',
      '    command: echo "$ONCELY_JOB $ONCELY_SCHEDULE_ID $ONCELY_NODE" >> manual.txt',
      `    cwd: ${JSON.stringify(work)}`,
      '',
    ].join('\n'),
  );
  const names = ['node-a', 'node-b', 'node-c'];
  const nodes = new Map<string, CliProcess>();
  const ledger = new Ledger(ledgerPath);
  const manual = new Ledger(manualPath);
  try {
    for (const name of names) {
      nodes.set(name, startCli(['run', jobsFile, ...store, '--node', name, '--grace', '10s'], { cwd: work }));
    }
    await Promise.all([...nodes.values()].map((n) => n.waitForLog(/ ready {4}node=/, 60_000)));
    await until(() => ledger.size >= 3, 30_000, '3 ledger lines');

    // Kill the node that ran the newest line, ~200 ms after it appeared: its command has exited
    // and its run is (almost certainly) marked done. Execution is at-least-once: a node killed
    // between its command's exit and the done-marker would rightly have the occurrence re-run by
    // another node (recovery), which this exactly-once count would then report as a duplicate.
    const before = ledger.size;
    await until(() => ledger.size > before, 10_000, 'a new ledger line');
    const victimName = ledger.seen.at(-1)!.line.split(' ')[2]!;
    await sleep(200);
    const victim = nodes.get(victimName)!;
    victim.process.kill('SIGKILL');
    const killed = await victim.exited;
    expect(killed.signal).toBe('SIGKILL');
    const survivors = names.filter((n) => n !== victimName);
    const afterKill = ledger.size;
    await until(() => ledger.size >= afterKill + 4, 30_000, '4 ledger lines after the kill');

    // Inspection against the live cluster.
    const status = await json<{
      jobs: { name: string; trigger: unknown; paused: boolean; nodes: string[]; lastRun?: Entry }[];
      nodes: { id: string }[];
    }>(['status', ...store]);
    const tick = status.jobs.find((j) => j.name === 'tick');
    expect(tick?.trigger).toEqual({ every: '1s' });
    expect(tick?.paused).toBe(false);
    expect(tick?.nodes).toEqual(expect.arrayContaining(survivors));
    expect(status.jobs.find((j) => j.name === 'manual')?.trigger).toBeNull();
    expect(status.nodes.map((n) => n.id)).toEqual(expect.arrayContaining(survivors));

    const live = await json<{ id: string; pid: number; lastSeen: string }[]>(['nodes', ...store]);
    expect(live.map((n) => n.id)).toEqual(expect.arrayContaining(survivors));

    const history = await json<Entry[]>(['history', ...store, '--job', 'tick', '--limit', '3']);
    expect(Array.isArray(history)).toBe(true);
    expect(history).toHaveLength(3);
    const times = history.map((e) => Date.parse(e.fireTime));
    expect(times[0]!).toBeGreaterThan(times[1]!);
    expect(times[1]!).toBeGreaterThan(times[2]!);
    for (const e of history) {
      expect(e.job).toBe('tick');
      expect(['running', 'succeeded']).toContain(e.status);
      if (e.status === 'succeeded') expect(e.output).toBe(`ran on ${e.node}\n`);
    }
    expect(await json<Entry[]>(['history', ...store, '--limit', '1'])).toHaveLength(1);

    const locks = await json<
      { key: string; owner: string; token: number; acquiredAt: string; expiresAt: string }[]
    >(['locks', ...store, '--all', '--limit', '10000']);
    // Finished occurrences stay held ("done") for an hour: with --all the latest tick's claim is
    // among them (test/cli-inspect.test.ts: without --all they are left out).
    const latest = history.find((e) => e.status === 'succeeded')!;
    const claim = locks.find((l) => l.key.startsWith('occ|tick|') && l.owner === latest.node);
    expect(claim).toBeDefined();
    expect(Date.parse(claim!.expiresAt)).toBeGreaterThan(Date.parse(claim!.acquiredAt));
    const text = await runCli(['locks', ...store, '--all']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.split('\n')[0]).toMatch(/^KEY +KIND +OWNER +TOKEN +ACQUIRED +EXPIRES$/);

    // trigger: the manual job runs once, on one node.
    const trig = await runCli(['trigger', 'manual', ...store]);
    expect(trig.code, trig.stderr).toBe(0);
    expect(trig.stderr).toBe('');
    await until(() => manual.size >= 1, 15_000, 'the triggered run');
    await sleep(1500);
    manual.read();
    expect(manual.seen.map((l) => l.line)).toEqual([expect.stringMatching(/^manual manual:\S+ node-[abc]$/)]);

    // pause: no tick runs while paused (once the pause reached every node, within ~1 s).
    const pause = await runCli(['pause', 'tick', ...store]);
    expect(pause.code, pause.stderr).toBe(0);
    const pausedAt = Date.now();
    await sleep(5000);
    ledger.read();
    // Every node reads pauses once per poll (1 s); some slack for a loaded machine.
    const whilePaused = ledger.seen.filter((l) => l.at > pausedAt + 2500);
    expect(whilePaused).toEqual([]);
    const paused = await json<{ jobs: { name: string; paused: boolean }[] }>(['status', ...store]);
    expect(paused.jobs.find((j) => j.name === 'tick')?.paused).toBe(true);
    const resume = await runCli(['resume', 'tick', ...store]);
    expect(resume.code, resume.stderr).toBe(0);
    const resumedAt = Date.now();
    const atResume = ledger.size;
    await until(() => ledger.size >= atResume + 3, 30_000, 'ticks after resume');

    const stopping = survivors.map((n) => nodes.get(n)!);
    for (const n of stopping) n.process.kill('SIGTERM');
    const exits = await Promise.all(stopping.map((n) => n.exited));
    expect(exits, stopping.map((n) => n.stderr()).join('\n')).toEqual(
      survivors.map(() => ({ code: 0, signal: null })),
    );
    for (const n of stopping) expect(n.stderr()).toMatch(/ stopped {2}node=/);
    ledger.stop();

    // Every fire time exactly once.
    const fired = ledger.seen.map(({ line }) => {
      const [job, fireTime, node] = line.split(' ');
      expect(job).toBe('tick');
      expect(names).toContain(node);
      return Date.parse(fireTime!);
    });
    const counts = new Map<number, number>();
    for (const t of fired) counts.set(t, (counts.get(t) ?? 0) + 1);
    const duplicates = [...counts].filter(([, n]) => n > 1).map(([t]) => new Date(t).toISOString());
    // On failure: the ledger and every node's log, to tell a takeover from a recovery.
    const evidence = () =>
      [
        ...ledger.seen.map((l) => `${new Date(l.at).toISOString()} ${l.line}`),
        ...[...nodes].map(([name, n]) => `--- ${name}\n${n.stderr()}`),
      ].join('\n');
    expect(duplicates, evidence()).toEqual([]);
    // Fire times still waiting behind the overlap gate when the survivors stopped: claimed on
    // time behind the resume's misfire replay (docs/overlap.md: such a fire time waits rather
    // than being skipped), kept in the store as pending runs, to run at the next start — not lost.
    // CI saw one (+1 s after the replay's run on a loaded host, the nodes stopped a second later).
    const waiting = await pendingFireTimes(store);
    expect(
      waiting.length,
      `still waiting at the stop: ${waiting.map((t) => new Date(t).toISOString())}`,
    ).toBeLessThanOrEqual(3);
    // No holes: consecutive seconds from the first line to the last, except while paused (a node
    // was alive throughout, so nothing else may be missing).
    const sorted = [...counts.keys()].sort((a, b) => a - b);
    for (const t of sorted) expect(t % 1000).toBe(0);
    const holes: string[] = [];
    for (let i = 1; i < sorted.length; i++) {
      for (let t = sorted[i - 1]! + 1000; t < sorted[i]!; t += 1000) {
        if ((t < pausedAt - 2000 || t > resumedAt + 1000) && !waiting.includes(t))
          holes.push(new Date(t).toISOString());
      }
    }
    expect(holes, `${evidence()}\nstill waiting: ${waiting.map((t) => new Date(t).toISOString())}`).toEqual(
      [],
    );
    // The history checker over the ledger (each line: job, fire time, node, token, attempt): no
    // duplicate, no stale token, no fire time lost outside the pause.
    const sinceFirst =
      sorted.length === 0
        ? []
        : expectedOccurrences('tick', { every: '1s' }, { from: sorted[0]!, to: sorted.at(-1)! });
    expectHistoryHolds({
      records: ledger.seen.map(({ line, at }) => {
        const [job, fireTime, node, token, attempt] = line.split(' ');
        return {
          node: node!,
          job: job!,
          fireTime: Date.parse(fireTime!),
          attempt: Number(attempt),
          token: Number(token),
          source: Number(attempt) > 1 ? ('recover' as const) : ('schedule' as const),
          event: 'start' as const,
          at,
        };
      }),
      jobs: [{ job: 'tick', leaseMs: 30_000 }],
      expected: sinceFirst.filter(
        (e) =>
          (e.fireTime < pausedAt - 2000 || e.fireTime > resumedAt + 1000) && !waiting.includes(e.fireTime),
      ),
    });
    // Both survivors took part after the kill (not required for correctness, but a sign the
    // work is shared): at least one ran something after it.
    expect(ledger.seen.slice(afterKill).some((l) => survivors.includes(l.line.split(' ')[2]!))).toBe(true);
  } finally {
    ledger.stop();
    manual.stop();
    for (const n of nodes.values())
      if (n.process.exitCode === null && n.process.signalCode === null) n.process.kill('SIGKILL');
  }
}

describe('oncely run: three nodes, one store', () => {
  it('runs each fire time exactly once on SQLite, through a SIGKILLed node, pause, resume and trigger', async () => {
    await clusterScenario('sqlite', ['--store', `sqlite:${join(dir, 'cluster.db')}`]);
  }, 180_000);

  it.skipIf(postgres.skip !== undefined)(
    'runs each fire time exactly once on PostgreSQL, through a SIGKILLed node, pause, resume and trigger',
    async () => {
      await clusterScenario('postgres', ['--store', postgres.url!, '--prefix', testPrefix('cli')]);
    },
    180_000,
  );
});
