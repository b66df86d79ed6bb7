import { heapPop, heapPush } from '../../core/heap.js';

/** How often an expected entry that has not appeared yet is looked for again before giving up on it. */
const EXPECT_TRIES = 3;

/** One expectation: `gen` tells the current one of a schedule from those it replaced. */
interface Expectation {
  id: string;
  at: number;
  tries: number;
  gen: number;
}

/**
 * The due entries this node expects soon: a stored schedule it offered in full moves on to its
 * next fire time, and a read is owed when that comes (due-index.ts, `offeredInFull`). By schedule
 * id: `at`, when the moved entry is due, and how often it was looked for and not found.
 *
 * Nothing here walks every expectation: the loop asks for the earliest at every turn
 * (`DueIndex.wakeAt`) and every read sweeps. With 20,000 stored schedules every few seconds, a
 * walk for the earliest at each turn was a sixth of the node's CPU (until 2f6ed38); with 25,000
 * every 30 s, the sweep's walk after each of a fan-out's ~340 reads, and the earliest found again
 * after it, were 9 % and 2 % of the main thread's samples (until aa6635f). A binary
 * min-heap by `at` holds every expectation made; one replaced or dropped stays in it, stale (its
 * `gen` no longer the schedule's), until it comes to the top and is thrown away there, or the heap
 * is rebuilt from the live ones when stale ones outnumber them.
 */
export class ExpectedMoves {
  private readonly byId = new Map<string, Expectation>();
  private readonly heap: Expectation[] = [];
  private gen = 0;

  /** Schedule `id`'s entry is expected at `at` (store time). */
  expect(id: string, at: number): void {
    const x = { id, at, tries: 0, gen: ++this.gen };
    this.byId.set(id, x);
    this.push(x);
  }

  /**
   * Schedule `id`'s entry is not to move soon after all: its claim waits for the run before it
   * (claim/prev-run.ts `wait`) and is judged again at a poll — no read is owed for it meanwhile.
   */
  cancel(id: string): void {
    this.byId.delete(id);
  }

  /** The earliest expected time, leaving out paused schedules (their moves will not come). */
  earliest(paused: ReadonlySet<string>): number {
    this.dropStaleTop();
    const top = this.heap[0];
    if (top === undefined) return Number.POSITIVE_INFINITY;
    if (paused.size === 0 || !paused.has(top.id)) return top.at;
    // The heap's entries in order of `at` until one is live and not paused: a second, small heap
    // of positions, each popped position's children pushed — as many steps as entries passed over.
    const order = [0];
    const before = (i: number, j: number) =>
      (this.heap[i] as Expectation).at < (this.heap[j] as Expectation).at;
    while (order.length > 0) {
      const i = heapPop(order, before) as number;
      const x = this.heap[i] as Expectation;
      if (this.live(x) && !paused.has(x.id)) return x.at;
      for (const c of [2 * i + 1, 2 * i + 2]) if (c < this.heap.length) heapPush(order, c, before);
    }
    return Number.POSITIVE_INFINITY;
  }

  /**
   * After a read at `now` that met the schedules `seen`: theirs are no longer expected; one whose
   * time has passed unmet is looked for again a poll later, at most EXPECT_TRIES times.
   */
  sweep(seen: ReadonlySet<string>, now: number, pollMs: number): void {
    for (const id of seen) this.byId.delete(id);
    for (;;) {
      this.dropStaleTop();
      const x = this.heap[0];
      if (x === undefined || x.at > now) break;
      this.pop();
      if (++x.tries > EXPECT_TRIES) this.byId.delete(x.id);
      else {
        x.at = now + pollMs;
        this.push(x);
      }
    }
    if (this.heap.length > 2 * this.byId.size + 1_000) this.rebuild();
  }

  /** Expectations held (live ones), for tests. */
  get size(): number {
    return this.byId.size;
  }

  private live(x: Expectation): boolean {
    return this.byId.get(x.id)?.gen === x.gen;
  }

  private dropStaleTop(): void {
    while (this.heap.length > 0 && !this.live(this.heap[0] as Expectation)) this.pop();
  }

  private rebuild(): void {
    this.heap.length = 0;
    for (const x of this.byId.values()) this.push(x);
  }

  private push(x: Expectation): void {
    heapPush(this.heap, x, earlier);
  }

  private pop(): void {
    heapPop(this.heap, earlier);
  }
}

const earlier = (a: Expectation, b: Expectation) => a.at < b.at;
