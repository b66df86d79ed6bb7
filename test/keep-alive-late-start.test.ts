/**
 * A keep-alive started late in its lease renews before its abort point (src/lock/keep-alive.ts):
 * its first renewal is due half a lease from now, or at once when less than half of the lease is
 * left.
 *
 * Before, the first renewal was always half a lease after the keep-alive started, so work started
 * with little of its lease left — a claim adopted after its answer was lost, a run that
 * waited for its start — was aborted at the deadline instead of extended, though the store
 * answered; and a node frozen across that deadline ran on beside the next holder of its gate
 * (simulator, mix5 faults, seed 780: a run started 2.1 s into a 3 s lease, another node took the
 * gate 1 s later while it went on).
 */
import { describe, expect, it } from 'vitest';
import { KeepAlive, type Renewable } from '../src/lock/keep-alive.js';

/** A lease whose local deadline is `leftMs` away; each extend moves it to now + leaseMs. */
function lateLease(leftMs: number): Renewable & { extends: number } {
  let deadline = performance.now() + leftMs;
  return {
    name: 'late',
    extends: 0,
    get localDeadline() {
      return deadline;
    },
    async extend(leaseMs: number) {
      this.extends++;
      deadline = Math.max(deadline, performance.now() + leaseMs);
      return true;
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('KeepAlive started late in its lease', () => {
  it('renews before its abort point when little of the lease is left, and goes on', async () => {
    // A 2 s lease with 0.5 s left (margin 0.2 s): the first renewal was due at +1 s, after the
    // abort at +0.3 s; now at +0.1 s.
    const lease = lateLease(500);
    const keeper = new KeepAlive(lease, { leaseMs: 2_000, renew: true });
    try {
      await sleep(700);
      expect(lease.extends).toBeGreaterThanOrEqual(1);
      expect(keeper.signal.aborted).toBe(false);
    } finally {
      await keeper.stop();
    }
  });

  it('renews at once when less than half the lease is left', async () => {
    // A 3 s lease with 1.2 s left: due two margins before the deadline (+0.6 s) before; now at
    // once, so that one lost extend and a node frozen near the deadline do not outlive it.
    const lease = lateLease(1_200);
    const keeper = new KeepAlive(lease, { leaseMs: 3_000, renew: true });
    try {
      await sleep(150);
      expect(lease.extends).toBe(1);
      expect(keeper.signal.aborted).toBe(false);
    } finally {
      await keeper.stop();
    }
  });

  it('renews half a lease from now when most of the lease is left', async () => {
    const lease = lateLease(1_900);
    const keeper = new KeepAlive(lease, { leaseMs: 2_000, renew: true });
    try {
      await sleep(300);
      expect(lease.extends).toBe(0);
      expect(keeper.signal.aborted).toBe(false);
    } finally {
      await keeper.stop();
    }
  });
});

/** `lease` with its extend replaced by `extend`. */
function withExtend(lease: Renewable, extend: Renewable['extend']): Renewable {
  return {
    name: lease.name,
    get localDeadline() {
      return lease.localDeadline;
    },
    extend,
  };
}

describe('KeepAlive.fresh: work about to start late in its lease renews first', () => {
  it('resolves only after the renewal has answered when little of the lease is left', async () => {
    // A 3 s lease with 0.4 s left: the handler would start with its first renewal still on the
    // way, and a node frozen right then outlived the lease (simulator, busy faults, seed 23).
    const lease = lateLease(400);
    let answer: (ok: boolean) => void = () => {};
    const slow = withExtend(lease, async (leaseMs) => {
      await new Promise<boolean>((r) => {
        answer = r;
      });
      return lease.extend(leaseMs);
    });
    const keeper = new KeepAlive(slow, { leaseMs: 3_000, renew: true });
    try {
      let done = false;
      const fresh = keeper.fresh(1_000).then((ok) => {
        done = true;
        return ok;
      });
      await sleep(50);
      expect(done).toBe(false);
      answer(true);
      expect(await fresh).toBe(true);
      expect(lease.extends).toBe(1);
      expect(lease.localDeadline - performance.now()).toBeGreaterThan(2_500);
    } finally {
      await keeper.stop();
    }
  });

  // [what, ms of a 3 s lease left, ms asked for, extends expected]
  const cases: [string, number, number, number][] = [
    ['resolves at once, with no extend, when enough of the lease is left', 2_900, 1_000, 0],
    // The first renewal is due at +1.5 s (1.8 s left); asked for 2 s: now.
    ['renews now when the renewal was due later (the lease aged during a wait)', 1_800, 2_000, 1],
  ];
  for (const [what, leftMs, askMs, extendsExpected] of cases)
    it(what, async () => {
      const lease = lateLease(leftMs);
      const keeper = new KeepAlive(lease, { leaseMs: 3_000, renew: true });
      try {
        expect(await keeper.fresh(askMs)).toBe(true);
        expect(lease.extends).toBe(extendsExpected);
      } finally {
        await keeper.stop();
      }
    });

  it('answers false when the lease is gone', async () => {
    const lease = lateLease(400);
    const gone = withExtend(lease, async () => false);
    const keeper = new KeepAlive(gone, { leaseMs: 3_000, renew: true });
    try {
      expect(await keeper.fresh(1_000)).toBe(false);
      expect(keeper.signal.aborted).toBe(true);
    } finally {
      await keeper.stop();
    }
  });
});
