/**
 * Per-schedule pause under a running fleet (issue 32): three node processes on PostgreSQL run one
 * job's 30 stored schedules, every second (misfire 'skip', threshold 2 s). The test, as an
 * operator with its own scheduler, pauses five of them with a note, watches six fire times pass,
 * and resumes them. From the outside: no paused schedule runs a fire time of its pause (beyond the
 * documented reach of a pause and the misfire threshold at the resume); the fire times it passed
 * over are ONE `paused` history entry per schedule, whose span is exactly the gap between its runs;
 * the other 25 schedules run each fire time once, on any node; `schedules.get` shows the pause
 * while it lasts (a second pause keeps its start and replaces the note) and not after; runs come
 * back after the resume. The history checker (`oncely/testing`, with `pauses`) judges it all.
 *
 * Tolerances, from the docs: a pause is in force on every node within a poll (docs/pause.md; the
 * nodes poll every 100 ms) and "a claim a node sent just before it saw the pause may still run one
 * fire time"; DESIGN.md promises every node within 1 s. So a run of a fire time up to REACH = 1 s
 * after the pause call returned is allowed, and not one later. At the resume, a fire time still
 * within the misfire threshold (2 s here) runs on time (docs/pause.md, "Resuming"), so a run of a
 * fire time after `resume − 2 s` — less the spread grace, after which lateness counts on a node that
 * does not go first (docs/scheduler.md) — is allowed too.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { randomId } from '../src/core/ids.js';
import { openStore } from '../src/index.js';
import { spreadGrace } from '../src/scheduler/control/spread.js';
import { createScheduler } from '../src/scheduler/index.js';
import type { HistoryEntry } from '../src/scheduler/types.js';
import {
  type ExpectedOccurrence,
  expectedOccurrences,
  recordsFromHistory,
  skipsFromHistory,
} from '../src/testing/index.js';
import { serverBackend, testPrefix } from './harness/backends.js';
import { spawnTsx } from './harness/child.js';
import { expectHistoryHolds, runsFromLines } from './harness/history.js';
import { until } from './harness/scheduler-suite.js';

interface Start {
  event: 'start';
  node: string;
  scheduleId: string;
  fireTime: number;
  token: number;
}

const SECOND = 1000;
/** The fixture's misfireThreshold. */
const THRESHOLD = 2 * SECOND;
/** How long after the pause call a fire time may still run (DESIGN.md: every node within 1 s). */
const REACH = SECOND;
/**
 * How much later than `resume − THRESHOLD` a fire time may be and still run at the resume: the
 * node that claims it may be one that goes after the grace (another node goes first), and its
 * lateness counts from the end of the grace (due/due-entry.ts, docs/spreading) — a quarter of the
 * 1 s interval — plus the error of the node's estimate of the store clock (100 ms). Seen in CI and
 * here: fire times 2.10–2.16 s before the resume ran.
 */
const RESUME_SLACK = spreadGrace(SECOND) + 100;
/** How long the schedules stay paused (store time): six fire times. */
const PAUSE_MS = 6 * SECOND;
const SCHEDULES = 30;

const iso = (t: number) => new Date(t).toISOString().slice(17, 23);

describe('per-schedule pause: 3 node processes on PostgreSQL', () => {
  const postgres = serverBackend('postgres');
  const script = fileURLToPath(new URL('./fixtures/pause-node.ts', import.meta.url));

  it.skipIf(postgres.skip !== undefined)(
    'paused schedules run nothing while paused and are one paused span each; the others run every fire time once',
    async () => {
      const prefix = testPrefix('pause3');
      const job = `pz-${randomId(5)}`;
      const lines: unknown[] = [];
      const procs = ['a', 'b', 'c'].map((id) =>
        spawnTsx(script, [postgres.url!, prefix, `${job}-${id}`, job], (line) => {
          if (line.startsWith('{')) lines.push(JSON.parse(line));
        }),
      );
      const store = await openStore(postgres.url!, { prefix });
      const operator = createScheduler({ store, node: 'operator', logger: false });
      const untilStoreTime = async (t: number) => {
        while ((await store.now()) < t) await new Promise((r) => setTimeout(r, 50));
      };
      try {
        const ready = () => lines.filter((l) => (l as { event: string }).event === 'ready').length;
        await until(() => ready() === 3, 30_000, '3 nodes started');
        const ids = Array.from({ length: SCHEDULES }, (_, i) => `${job}:${String(i).padStart(2, '0')}`);
        // Five spread over the id range (the due index reads in id order).
        const paused = ids.filter((_, i) => i % 6 === 0);
        const running = ids.filter((id) => !paused.includes(id));
        const upsertedAt = await store.now();
        await operator.schedules.upsert(ids.map((id) => ({ id, job, every: '1s' })));
        // The first fire time checked: the second after the upsert (the first may pass while the
        // nodes read the new schedules).
        const from = Math.ceil(upsertedAt / SECOND) * SECOND + SECOND;
        const starts = () => lines.filter((l): l is Start => (l as { event: string }).event === 'start');
        const ranOf = (id: string) => starts().filter((s) => s.scheduleId === id);
        await until(
          () => ids.every((id) => ranOf(id).filter((s) => s.fireTime >= from).length >= 2),
          20_000,
          'two runs of every schedule',
        );

        // The operator pauses five, with a note each.
        await Promise.all(
          paused.map((id) => operator.schedules.pause(id, { note: `on holiday ${id}`, actor: 'operator' })),
        );
        const pausedAt = await store.now();
        const since = new Map<string, number>();
        for (const id of paused) {
          const got = await operator.schedules.get(id);
          expect(got?.pause, id).toMatchObject({ note: `on holiday ${id}`, actor: 'operator' });
          expect(got!.pause!.since.getTime(), id).toBeLessThanOrEqual(pausedAt);
          expect(got!.pause!.since.getTime(), id).toBeGreaterThanOrEqual(upsertedAt);
          since.set(id, got!.pause!.since.getTime());
        }
        expect((await operator.schedules.get(running[0]!))?.pause).toBeUndefined();
        // Pausing again keeps the start and replaces the note.
        await untilStoreTime(pausedAt + PAUSE_MS / 2);
        await operator.schedules.pause(paused[0]!, { note: 'still on holiday', actor: 'operator' });
        const again = await operator.schedules.get(paused[0]!);
        expect(again?.pause?.note).toBe('still on holiday');
        expect(again?.pause?.since.getTime()).toBe(since.get(paused[0]!));

        await untilStoreTime(pausedAt + PAUSE_MS);
        const resumeAt = await store.now();
        for (const id of paused) expect((await operator.schedules.get(id))?.pause, id).toBeDefined();
        await Promise.all(paused.map((id) => operator.schedules.resume(id, { actor: 'operator' })));
        const resumedAt = await store.now();
        for (const id of paused) expect((await operator.schedules.get(id))?.pause, id).toBeUndefined();

        // Runs come back after the resume.
        await until(
          () => paused.every((id) => ranOf(id).some((s) => s.fireTime > resumedAt)),
          20_000,
          'a run of each resumed schedule after the resume',
        );
        await untilStoreTime(resumedAt + 4 * SECOND);
        const end = await store.now();
        // The last fire time checked: every node has had the misfire threshold to claim it.
        const to = Math.floor((end - THRESHOLD - 500) / SECOND) * SECOND;
        // Let the last lines arrive.
        await new Promise((r) => setTimeout(r, 300));
        const history = await operator.history({ job, limit: 10_000 });
        const all = starts();
        const timeline = (id: string) =>
          `paused ${iso(pausedAt)}, resume ${iso(resumeAt)}-${iso(resumedAt)}, checked ${iso(from)}..${iso(to)}; ${id} ran ${ranOf(
            id,
          )
            .map((s) => `${iso(s.fireTime)}@${s.node.slice(-1)}`)
            .join(' ')}; history ${history
            .filter((h) => h.scheduleId === id && h.status === 'skipped')
            .map((h) => `${h.reason} ${JSON.stringify(h.span ?? iso(h.fireTime.getTime()))}`)
            .join(', ')}`;

        // No fire time ran twice, anywhere.
        const keys = all.map((s) => `${s.scheduleId}@${s.fireTime}`);
        expect(
          keys.filter((k, i) => keys.indexOf(k) !== i),
          'fire times run twice',
        ).toEqual([]);

        const spansOf = (id: string): HistoryEntry[] =>
          history.filter((h) => h.scheduleId === id && h.status === 'skipped' && h.reason === 'paused');
        const { records, skips } = runsFromLines(lines);
        // Fire times just after a span reported missed (see `misfired` below): skips the checker counts too.
        let missedAfterSpans = 0;
        for (const id of paused) {
          const ran = ranOf(id).map((s) => s.fireTime);
          // Nothing of the pause ran, beyond the pause's reach and the threshold at the resume.
          expect(
            ran.filter((t) => t > pausedAt + REACH && t <= resumeAt - THRESHOLD - RESUME_SLACK).map(iso),
            `${id} ran while paused: ${timeline(id)}`,
          ).toEqual([]);
          // One paused span, exactly the gap between its runs.
          const spans = spansOf(id);
          expect(spans, timeline(id)).toHaveLength(1);
          const entry = spans[0]!;
          expect(entry, timeline(id)).toMatchObject({ job, status: 'skipped', reason: 'paused' });
          const first = entry.span!.first.getTime();
          const last = entry.span!.last.getTime();
          expect(entry.fireTime.getTime(), timeline(id)).toBe(first);
          expect(entry.span!.count, timeline(id)).toBe((last - first) / SECOND + 1);
          // It starts at the latest with the first fire time the pause reached, and covers every
          // fire time it must have stopped; no fire time after the resume.
          expect(first, timeline(id)).toBeGreaterThanOrEqual(pausedAt - THRESHOLD);
          expect(first, timeline(id)).toBeLessThanOrEqual(pausedAt + REACH + SECOND);
          expect(last, timeline(id)).toBeGreaterThanOrEqual(resumeAt - THRESHOLD - RESUME_SLACK - SECOND);
          expect(last, timeline(id)).toBeLessThanOrEqual(resumedAt);
          expect(first, timeline(id)).toBeGreaterThan(from);
          // Every fire time checked ran exactly once, or lies in the span (and did not run) — or,
          // just after the span, was reported missed: on time when the resume was first read
          // (within the threshold and the grace), late by the time a node claimed it (CI: 2.19 s
          // after its fire time, threshold 2 s).
          const misfired = (t: number) =>
            t > last &&
            t > resumeAt - THRESHOLD - RESUME_SLACK - SECOND &&
            skips.some((k) => k.scheduleId === id && k.reason === 'misfire' && k.from <= t && t <= k.to);
          const wrong: string[] = [];
          for (let t = from; t <= to; t += SECOND) {
            const n = ran.filter((r) => r === t).length;
            const inSpan = first <= t && t <= last;
            if (!inSpan && n === 0 && misfired(t)) missedAfterSpans++;
            if (inSpan ? n !== 0 : n !== 1 && !(n === 0 && misfired(t)))
              wrong.push(`${iso(t)} ran ${n}${inSpan ? ' (in the span)' : ''}`);
          }
          expect(wrong, timeline(id)).toEqual([]);
          // The skipped event said the same span, once, on the node that settled it.
          const said = skips.filter((s) => s.scheduleId === id && s.reason === 'paused');
          expect(
            said.map((s) => [s.from, s.to]),
            timeline(id),
          ).toEqual([[first, last]]);
          // Runs came back after the resume.
          expect(ran.some((t) => t > resumedAt)).toBe(true);
        }
        // The others ran every fire time once, on any node, and have no paused span.
        const wrong: string[] = [];
        for (const id of running) {
          if (spansOf(id).length > 0) wrong.push(`${id}: ${spansOf(id).length} paused spans`);
          const ran = ranOf(id).map((s) => s.fireTime);
          for (let t = from; t <= to; t += SECOND) {
            const n = ran.filter((r) => r === t).length;
            if (n !== 1) wrong.push(`${id} ${iso(t)} ran ${n}: ${timeline(id)}`);
          }
        }
        expect(wrong).toEqual([]);

        // The checker: every expected occurrence ran once or lies in a paused span that a pause
        // of its schedule bears out; no duplicate, no stale token, no skip without its reason.
        const expected: ExpectedOccurrence[] = ids.flatMap((id) =>
          expectedOccurrences(job, { every: '1s' }, { from, to, scheduleId: id }),
        );
        const result = expectHistoryHolds({
          records: [...records, ...recordsFromHistory(history)],
          skips: [...skips, ...skipsFromHistory(history)],
          jobs: [{ job, leaseMs: 30_000, misfireThresholdMs: THRESHOLD, overlap: 'skip' }],
          expected,
          pauses: paused.map((id) => ({ job, scheduleId: id, from: since.get(id)!, to: resumedAt })),
        });
        const inSpans = paused.reduce((n, id) => n + spansOf(id)[0]!.span!.count!, 0);
        expect(result.skipped).toBeGreaterThanOrEqual(paused.length * 2);
        // (A fire time due while paused and missed after the resume is a skip the checker bears
        // out: less than the threshold was left to claim it.)
        expect(result.skipped).toBeLessThanOrEqual(inSpans + missedAfterSpans);
        expect(result.occurrences + result.skipped).toBeGreaterThanOrEqual(expected.length);

        const nodes = new Set(all.map((s) => s.node));
        expect(nodes.size, 'nodes that ran something').toBeGreaterThanOrEqual(2);
        console.log(
          `pause, 3 processes: ${all.length} starts on ${nodes.size} nodes, ${expected.length} fire times checked, ${result.skipped} in ${paused.length} paused spans (${paused
            .map((id) => spansOf(id)[0]!.span!.count)
            .join(', ')})`,
        );
      } finally {
        for (const p of procs) if (p.process.exitCode === null) p.process.kill('SIGKILL');
        await store.close();
      }
    },
    60_000,
  );
});
