import { nextFireTimes } from './fire-times.js';
import type { CompiledTrigger } from './trigger.js';

/**
 * Cron fire times counted one by one at most, per span (croner costs tens of µs per fire time
 * under a time zone): beyond this a span is measured by its ends, not walked.
 */
const CRON_COUNT_LIMIT = 1000;
/** Cron fire times asked of croner per call while walking a span. */
const CRON_CHUNK = 64;

/** The fire times of a trigger in an open interval, summarised: its ends and its latest few. */
export interface FireSpan {
  /** The earliest fire time in the span. */
  first: number;
  /** How many fire times the span holds; `undefined` for a cron span too long to count cheaply. */
  count: number | undefined;
  /** The latest fire times of the span (up to the number asked for, all when fewer), oldest first; never empty. */
  tail: number[];
}

/**
 * The fire times strictly after `after` and strictly before `before`, without enumerating them
 * all: an outage of a week holds 600,000 fire times of a 1 s job, and only the first, the count and
 * the latest `tail` of them matter to the misfire policies. `every` and `at` are pure arithmetic;
 * `cron` walks at most {@link CRON_COUNT_LIMIT} (or `tail`) fire times, and beyond that jumps to the
 * end with croner's `previousRuns` and walks forward from there (forward is what defines the fire
 * times, so the tail is always what `nextFireTimes` gives).
 *
 * @example
 * fireSpan(compileTrigger({ every: '1s' }), 0, 10_500, 3); // { first: 1000, count: 10, tail: [8000, 9000, 10000] }
 */
export function fireSpan(
  trigger: CompiledTrigger,
  after: number,
  before: number,
  tail: number,
): FireSpan | undefined {
  const n = Math.max(1, Math.floor(tail));
  switch (trigger.kind) {
    case 'every': {
      const step = trigger.everyMs;
      const first = (Math.floor(after / step) + 1) * step;
      if (!(first < before)) return undefined;
      const last = (Math.ceil(before / step) - 1) * step;
      const count = (last - first) / step + 1;
      const k = Math.min(n, count);
      return { first, count, tail: Array.from({ length: k }, (_, i) => last - (k - 1 - i) * step) };
    }
    case 'at':
      return trigger.at > after && trigger.at < before
        ? { first: trigger.at, count: 1, tail: [trigger.at] }
        : undefined;
    case 'cron':
      return cronSpan(trigger, after, before, n);
    case 'bounded':
      // Inclusive bounds (schedule/bounds.ts): the span narrowed to [startAt, endAt].
      return fireSpan(
        trigger.inner,
        Math.max(after, trigger.startAt - 1),
        Math.min(before, trigger.endAt + 1),
        tail,
      );
  }
}

/** Walks forward from `from` while fire times are before `before`, at most `limit` of them. */
function walk(
  trigger: CompiledTrigger,
  from: number,
  before: number,
  limit: number,
): { times: number[]; reached: boolean } {
  const times: number[] = [];
  let at = from;
  while (times.length < limit) {
    // One at a time first: most spans are a fire time or two, and single steps are remembered
    // per trigger (fire-times.ts), so 100,000 schedules sharing a trigger walk it once.
    const size = times.length < 4 ? 1 : Math.min(CRON_CHUNK, limit - times.length + 1);
    const chunk = nextFireTimes(trigger, at, size);
    for (const f of chunk) {
      if (f >= before) return { times, reached: true };
      if (times.length >= limit) return { times, reached: false };
      times.push(f);
    }
    if (chunk.length === 0) return { times, reached: true };
    at = chunk.at(-1)!;
  }
  // Exactly `limit` found: reached only if the next one is not before `before`.
  const next = nextFireTimes(trigger, at, 1)[0];
  return { times, reached: next === undefined || next >= before };
}

function cronSpan(
  trigger: Extract<CompiledTrigger, { kind: 'cron' }>,
  after: number,
  before: number,
  n: number,
): FireSpan | undefined {
  const head = walk(trigger, after, before, Math.max(CRON_COUNT_LIMIT, n));
  const first = head.times[0];
  if (first === undefined) return undefined;
  if (head.reached) return { first, count: head.times.length, tail: head.times.slice(-n) };
  // Too many to count: start again a little before the end. previousRuns only finds the anchor;
  // the tail is walked forward from it. If the two ever disagree (a DST corner), walk on from
  // the latest fire time found, a few times at most.
  let latest = head.times.at(-1)!;
  let window = head.times.slice(-n);
  for (let round = 0; round < 4; round++) {
    let anchor = latest;
    try {
      const previous = trigger.pattern.previousRuns(n, new Date(Math.floor(before)));
      const oldest = previous.at(-1)?.getTime();
      if (oldest !== undefined && oldest - 1 > latest) anchor = oldest - 1;
    } catch {
      // No previous runs to find: walk on from what we have.
    }
    const part = walk(trigger, anchor, before, n + CRON_CHUNK);
    window = anchor === latest ? [...window, ...part.times].slice(-n) : part.times.slice(-n);
    if (window.length === 0) break;
    latest = window.at(-1)!;
    if (part.reached) break;
  }
  return { first, count: undefined, tail: window.length > 0 ? window : [latest] };
}
