/**
 * The mark a run (or a page) writes once its handlers were called (run/invoked-mark.ts): what a
 * judge asks before it skips a later fire time naming that run. Its format and the judge's rule,
 * and when it is written: lazily, only for a run still going MARK_AFTER_MS after its first call,
 * deleted with the run's finish, kept when the run is abandoned.
 */
import { describe, expect, it } from 'vitest';
import type { Clock } from '../src/core/clock.js';
import type { WriteBatcher } from '../src/scheduler/finish/write-batch.js';
import {
  calledBy,
  decodeInvoked,
  encodeInvoked,
  InvokedMark,
  MARK_AFTER_MS,
} from '../src/scheduler/run/invoked-mark.js';
import type { WriteOp } from '../src/store/types.js';

/** A clock that moves only when told (timers fire in `advance`). */
function manualClock() {
  let now = 0;
  const timers: { at: number; fn: () => void }[] = [];
  const clock: Clock = {
    monotonic: () => now,
    sleep: () => Promise.reject(new Error('not used')),
    timer(ms, fn) {
      const t = { at: now + ms, fn };
      timers.push(t);
      return () => {
        timers.splice(timers.indexOf(t), 1);
      };
    },
  };
  const advance = async (ms: number) => {
    now += ms;
    for (const t of timers.filter((x) => x.at <= now)) {
      timers.splice(timers.indexOf(t), 1);
      t.fn();
    }
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { clock, advance };
}

/** A write batcher that records what it was asked to write (and fails while `failing`). */
function writes() {
  const calls: WriteOp[][] = [];
  const lingers: number[] = [];
  const w = {
    calls,
    lingers,
    failing: false,
    submit(ops: WriteOp[], lingerMs = 0) {
      calls.push(ops);
      lingers.push(lingerMs);
      return w.failing ? Promise.reject(new Error('store away')) : Promise.resolve(ops.map(() => true));
    },
  };
  return w;
}

describe('invoked mark', () => {
  it('encodes and decodes what a judge reads; anything else reads as no mark', () => {
    const gated = new Map<number, number | undefined>([
      [4, 1_500],
      [2, undefined],
    ]);
    expect(encodeInvoked(1_000, 1_020, new Map())).toBe('1000|1020');
    expect(encodeInvoked(1_000, 1_020, gated)).toBe('1000|1020|2,4=1500');
    expect(decodeInvoked('1000|1020|2,4=1500')).toEqual({ through: 1_000, first: 1_020, gated });
    expect(decodeInvoked('1000|1020')).toEqual({ through: 1_000, first: 1_020, gated: new Map() });
    for (const bad of [null, undefined, '', 'x|1', '1|y', '1|2|a', '1|2|3=z'])
      expect(decodeInvoked(bad), String(bad)).toBeUndefined();
  });

  it('counts a run as called by a fire time only when the mark covers it and its call came by then', () => {
    const mark = decodeInvoked('1000|1020|7,8=1900');
    // Started at 1000, first call at 1020: going at 1020 and after, not at 1010 (the answer to
    // its start came late), nor for a start past what the mark covers.
    expect(calledBy(mark, 1_000, 1_020)).toBe(true);
    expect(calledBy(mark, 1_000, 5_000)).toBe(true);
    expect(calledBy(mark, 1_000, 1_010)).toBe(false);
    expect(calledBy(mark, 1_001, 5_000)).toBe(false);
    // A start claimed ahead: not called before its start, whatever the first call.
    expect(calledBy(decodeInvoked('3000|1020'), 3_000, 2_500)).toBe(false);
    expect(calledBy(decodeInvoked('3000|1020'), 3_000, 3_000)).toBe(true);
    // Items that waited for their gate: by their own call, or not at all yet.
    expect(calledBy(mark, 1_000, 5_000, 7)).toBe(false);
    expect(calledBy(mark, 1_000, 1_800, 8)).toBe(false);
    expect(calledBy(mark, 1_000, 1_900, 8)).toBe(true);
    expect(calledBy(mark, 1_000, 5_000, 3)).toBe(true);
    expect(calledBy(undefined, 1_000, 5_000)).toBe(false);
  });

  it('writes nothing for a run that ends before MARK_AFTER_MS; once for one still going; its finish deletes it', async () => {
    const { clock, advance } = manualClock();
    const w = writes();
    const short = new InvokedMark(clock, w as unknown as WriteBatcher, 'go|a|1', 60_000);
    short.invoked(1_000, 1_005);
    await advance(MARK_AFTER_MS - 1);
    expect(await short.end()).toBeUndefined();
    await advance(100);
    expect(w.calls).toEqual([]);

    const long = new InvokedMark(clock, w as unknown as WriteBatcher, 'go|b|2', 60_000);
    long.invoked(1_000, 1_005);
    long.invoked(1_000, 1_007);
    await advance(MARK_AFTER_MS);
    expect(w.calls).toEqual([[{ op: 'put', key: 'go|b|2', value: '1000|1005', ttlMs: 60_000 }]]);
    await advance(1_000);
    expect(w.calls).toHaveLength(1);
    expect(await long.end()).toEqual({ op: 'delete', key: 'go|b|2' });
  });

  it("marks a page's gated items apart, writes again when more is called, and keeps the mark of an abandoned page", async () => {
    const { clock, advance } = manualClock();
    const w = writes();
    const page = new InvokedMark(clock, w as unknown as WriteBatcher, 'go|page|3', 60_000);
    page.wait([2]);
    page.invoked(1_000, 1_010, 0);
    await advance(MARK_AFTER_MS);
    expect(w.calls.at(-1)?.[0]).toMatchObject({ value: '1000|1010|2' });
    // A round claimed ahead, then the gated item.
    page.invoked(1_400, 1_402, 1);
    page.invoked(1_000, 1_650, 2);
    await advance(MARK_AFTER_MS);
    expect(w.calls.at(-1)?.[0]).toMatchObject({ value: '1400|1010|2=1650' });
    expect(w.calls).toHaveLength(2);
    // Its retry is called later: its first call stands (nothing new to write).
    page.invoked(1_000, 1_900, 2);
    await advance(MARK_AFTER_MS);
    expect(w.calls).toHaveLength(2);
    expect(await page.end(true)).toBeUndefined();
  });

  it("waits for company as long as its page's history writes may (runs started in rounds)", async () => {
    // A page claimed ahead marks its runs round by round: a mark sent at once took the history
    // entries lingering for company along, a call per round (write-batch.ts, lingerMs).
    const { clock, advance } = manualClock();
    const w = writes();
    let linger = 0;
    const page = new InvokedMark(clock, w as unknown as WriteBatcher, 'go|page|5', 60_000, () => linger);
    page.invoked(1_000, 1_010, 0);
    await advance(MARK_AFTER_MS);
    linger = 250;
    page.invoked(1_100, 1_110, 1);
    await advance(MARK_AFTER_MS);
    expect(w.lingers).toEqual([0, 250]);
    expect(w.calls.at(-1)?.[0]).toMatchObject({ value: '1100|1010' });
  });

  it('a failed write is tried again later, not at once', async () => {
    const { clock, advance } = manualClock();
    const w = writes();
    w.failing = true;
    const mark = new InvokedMark(clock, w as unknown as WriteBatcher, 'go|c|4', 60_000);
    mark.invoked(1_000, 1_001);
    await advance(MARK_AFTER_MS);
    expect(w.calls).toHaveLength(1);
    await advance(MARK_AFTER_MS);
    expect(w.calls).toHaveLength(1);
    w.failing = false;
    await advance(1_000);
    expect(w.calls).toHaveLength(2);
    expect(await mark.end()).toEqual({ op: 'delete', key: 'go|c|4' });
  });
});
