/** How often an expected entry that has not appeared yet is looked for again before giving up on it. */
const EXPECT_TRIES = 3;

/**
 * The due entries this node expects soon: a stored schedule it offered in full moves on to its
 * next fire time, and a read is owed when that comes (due-index.ts, `offeredInFull`). By schedule
 * id: `at`, when the moved entry is due, and how often it was looked for and not found.
 *
 * The earliest `at` is kept as the map changes, not found by a walk at each look: the loop asks
 * for it at every turn (`DueIndex.wakeAt`), and with 20,000 stored schedules every few seconds the
 * walk was a sixth of the node's CPU.
 */
export class ExpectedMoves {
  private readonly byId = new Map<string, { at: number; tries: number }>();
  /** The earliest `at` of {@link byId}; undefined: to be found again. */
  private earliestAt: number | undefined = Number.POSITIVE_INFINITY;

  /** Schedule `id`'s entry is expected at `at` (store time). */
  expect(id: string, at: number): void {
    const was = this.byId.get(id);
    this.byId.set(id, { at, tries: 0 });
    // An earlier expectation replaced may have been the earliest: found again then.
    if (was !== undefined && was.at <= at) this.earliestAt = undefined;
    else if (this.earliestAt !== undefined) this.earliestAt = Math.min(this.earliestAt, at);
  }

  /**
   * Schedule `id`'s entry is not to move soon after all: its claim waits for the run before it
   * (claim/prev-run.ts `wait`) and is judged again at a poll — no read is owed for it meanwhile.
   */
  cancel(id: string): void {
    const was = this.byId.get(id);
    if (was === undefined) return;
    this.byId.delete(id);
    if (this.earliestAt !== undefined && was.at <= this.earliestAt) this.earliestAt = undefined;
  }

  /** The earliest expected time, leaving out paused schedules (their moves will not come). */
  earliest(paused: ReadonlySet<string>): number {
    if (paused.size > 0) {
      let at = Number.POSITIVE_INFINITY;
      for (const [id, x] of this.byId) if (!paused.has(id)) at = Math.min(at, x.at);
      return at;
    }
    if (this.earliestAt === undefined) {
      let at = Number.POSITIVE_INFINITY;
      for (const x of this.byId.values()) at = Math.min(at, x.at);
      this.earliestAt = at;
    }
    return this.earliestAt;
  }

  /**
   * After a read at `now` that met the schedules `seen`: theirs are no longer expected; one whose
   * time has passed unmet is looked for again a poll later, at most EXPECT_TRIES times.
   */
  sweep(seen: ReadonlySet<string>, now: number, pollMs: number): void {
    for (const [id, x] of this.byId) {
      if (seen.has(id) || (x.at <= now && ++x.tries > EXPECT_TRIES)) this.byId.delete(id);
      else if (x.at <= now) x.at = now + pollMs;
    }
    this.earliestAt = undefined;
  }
}
