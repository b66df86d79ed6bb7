import { OncelyError } from '../../core/errors.js';
import type { CalendarDates, CalendarLookup } from '../../schedule/exclude.js';
import type { Store } from '../../store/types.js';
import { MAX_BATCH } from '../../store/validate.js';
import { keys } from '../keys.js';
import type { SchedulerEvents } from '../types.js';

/** A calendar as stored under `cal|<id>` (control/calendars.ts). */
export interface CalendarRecord {
  id: string;
  /** Sorted, distinct `YYYY-MM-DD` dates. */
  dates: string[];
  timezone?: string;
  /** Store time of the upsert that wrote it. */
  updatedAt: number;
}

/**
 * The calendars one node holds, read once and kept until they change: every calendar upsert or
 * remove rewrites `ctl|crev`, which each poll reads anyway with the other `ctl|` records
 * (control/feed.ts); a poll that finds it changed marks what is held stale, and the next tick
 * reads every calendar it needs again (one `getMany`) and swaps them in at once. A change
 * therefore reaches every node within a poll, at no read per calendar per poll. A calendar the
 * store does not hold (removed while schedules still name it) excludes nothing; reported once as
 * an `error` event until it is upserted again.
 *
 * Race: until the swap, lookups see the calendars as they were (never none: a change made on
 * this node while a tick is deciding does not empty them under it); an exclusion decided just
 * before a change is as the calendar was then. Nodes may briefly disagree about one fire time:
 * it is claimed once all the same, and recorded by whichever node won it.
 */
export class CalendarCache {
  private held = new Map<string, CalendarDates | null>();
  private revision: string | undefined;
  /** Bumped by each change seen: what is held was read before it, and is read again. */
  private generation = 0;
  /** The generation `held` was read at (all of it, or added to since). */
  private heldAt = 0;
  private readonly reported = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly emit: <K extends keyof SchedulerEvents>(event: K, payload: SchedulerEvents[K]) => void,
  ) {}

  /** The lookup exclusions use (schedule/exclude.ts): only calendars {@link ensure} loaded. */
  readonly lookup: CalendarLookup = (id) => this.held.get(id) ?? undefined;

  /** The change signal as a poll read it (or a change made here): what is held is read again. */
  seen(revision: string | undefined): void {
    if (revision === this.revision) return;
    this.revision = revision;
    this.generation++;
  }

  /** A calendar changed through this node: read again at its next tick, before any poll. */
  changedHere(): void {
    this.generation++;
  }

  /**
   * Makes sure the calendars of `ids` are held as of the latest change seen: nothing when they
   * are (the usual tick); after a change, all of them read again in one go and swapped in.
   */
  async ensure(ids: Iterable<string>): Promise<void> {
    const generation = this.generation;
    const stale = this.heldAt !== generation;
    const missing: string[] = [];
    for (const id of ids) if (stale || !this.held.has(id)) missing.push(id);
    if (missing.length === 0) return;
    // Filled aside, then swapped in: lookups meanwhile see what was held.
    const held = stale ? new Map<string, CalendarDates | null>() : new Map(this.held);
    for (let i = 0; i < missing.length; i += MAX_BATCH) {
      const chunk = missing.slice(i, i + MAX_BATCH);
      const values = await this.store.getMany(chunk.map((id) => keys.calendar(id)));
      chunk.forEach((id, n) => {
        const value = values[n] ?? null;
        if (value === null) {
          held.set(id, null);
          if (!this.reported.has(id)) {
            this.reported.add(id);
            this.emit('error', {
              error: new OncelyError(
                'NOT_FOUND',
                `calendar ${JSON.stringify(id)} is named in an exclude list but not stored: it excludes nothing until scheduler.calendars.upsert({ id: ${JSON.stringify(id)}, dates }) stores it`,
              ),
              during: `calendar ${id}`,
            });
          }
          return;
        }
        this.reported.delete(id);
        held.set(id, toDates(JSON.parse(value) as CalendarRecord));
      });
    }
    // A change seen during the read: swapped in all the same (no older than what was held), and
    // read again at the next tick.
    this.held = held;
    this.heldAt = generation;
  }
}

/** A stored calendar as the exclusion check reads it. */
export function toDates(record: CalendarRecord): CalendarDates {
  return { dates: new Set(record.dates), timezone: record.timezone };
}
