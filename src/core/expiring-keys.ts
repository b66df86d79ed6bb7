/**
 * Keys remembered until a time each, at most `max` of them: a node's short memories of what it
 * need not look at again (shards found on record, catch-up chain steps it took as its own).
 *
 * Invariant: keys are held in insertion order, and callers hold them with one length of hold (or
 * nearly), so insertion order is expiry order — pruning stops at the first key still held. When
 * full, the oldest key goes first, whether or not it is still held: forgetting costs a look, never
 * correctness.
 */
export class ExpiringKeys {
  private readonly until = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Holds `key` until `until` (store time). A key held already keeps its place, with the new time. */
  hold(key: string, until: number, now: number): void {
    for (const [k, u] of this.until) {
      if (u > now && this.until.size < this.max) break;
      this.until.delete(k);
    }
    this.until.set(key, until);
  }

  /** Whether `key` is held at `now`. */
  holds(key: string, now: number): boolean {
    const u = this.until.get(key);
    return u !== undefined && u > now;
  }

  get size(): number {
    return this.until.size;
  }
}
