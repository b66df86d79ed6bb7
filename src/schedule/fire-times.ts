import { invalidArgument } from '../core/errors.js';
import { type CompiledTrigger, compileTrigger, type Trigger } from './trigger.js';

/** What `fireTimes(trigger, options)` accepts. */
export interface FireTimesOptions {
  /** Only fire times strictly after this instant. */
  after: Date | number;
  /** How many (1..10,000). */
  count: number;
}

/**
 * The next `count` fire times strictly after `after`. Pure: the same inputs give the same dates
 * on every node, which is what lets nodes agree on an occurrence's key.
 *
 * - `every`: multiples of the interval counted from the Unix epoch (a 10 s job fires at :00, :10, …).
 * - `at`: the instant once, if it is after `after`.
 * - `cron`: croner in the trigger's IANA time zone (default UTC). DST: a time in a spring-forward
 *   gap fires once, right after the gap; in a repeated fall-back hour a job with fixed
 *   hour/minute/second fires once (the first occurrence), while sub-hourly jobs keep firing on real
 *   time.
 *
 * @example
 * fireTimes({ cron: '30 9 * * *', timezone: 'Asia/Shanghai' }, { after: new Date(), count: 3 });
 * fireTimes({ every: '10s' }, { after: Date.now(), count: 1 });
 */
export function fireTimes(trigger: Trigger | CompiledTrigger, options: FireTimesOptions): Date[] {
  if (options === null || typeof options !== 'object')
    throw invalidArgument('fireTimes takes options { after: Date | epoch ms, count } as its second argument');
  const compiled =
    trigger !== null && typeof trigger === 'object' && 'kind' in trigger
      ? trigger
      : compileTrigger(trigger, 'fireTimes');
  const after = options.after instanceof Date ? options.after.getTime() : options.after;
  if (!Number.isFinite(after)) throw invalidArgument('fireTimes: after must be a valid Date or epoch ms');
  const { count } = options;
  if (!Number.isInteger(count) || count < 1 || count > 10_000) {
    throw invalidArgument(`fireTimes: count must be a whole number from 1 to 10000; got ${count}`);
  }
  return nextFireTimes(compiled, after, count).map((ms) => new Date(ms));
}

/** Epoch-ms form of {@link fireTimes} for hot paths. */
export function nextFireTimes(trigger: CompiledTrigger, after: number, count: number): number[] {
  switch (trigger.kind) {
    case 'every': {
      const first = (Math.floor(after / trigger.everyMs) + 1) * trigger.everyMs;
      return Array.from({ length: count }, (_, i) => first + i * trigger.everyMs);
    }
    case 'at':
      return trigger.at > after ? [trigger.at] : [];
    case 'bounded': {
      // Fire times in [startAt, endAt] only (schedule/bounds.ts): the inner trigger's, from just
      // before startAt, cut at endAt.
      if (after >= trigger.endAt) return [];
      const times = nextFireTimes(trigger.inner, Math.max(after, trigger.startAt - 1), count);
      let n = times.length;
      while (n > 0 && times[n - 1]! > trigger.endAt) n--;
      return n === times.length ? times : times.slice(0, n);
    }
    case 'cron': {
      if (count !== 1) return trigger.pattern.nextRuns(count, new Date(after)).map((d) => d.getTime());
      // Croner in a time zone costs milliseconds per call, and a fan-out asks the same question
      // for every schedule sharing a trigger (100,000 users at 09:00 in five zones: five answers),
      // as does a bulk upsert for every schedule written before the trigger's next fire time.
      let spans = nextMemo.get(trigger);
      if (!spans) {
        spans = [];
        nextMemo.set(trigger, spans);
      }
      let next: number | undefined;
      for (const span of spans) {
        if (span.from <= after && after < span.next) {
          next = span.next;
          break;
        }
      }
      if (next === undefined) {
        next = trigger.pattern.nextRun(new Date(after))?.getTime() ?? Number.POSITIVE_INFINITY;
        if (spans.length >= NEXT_MEMO_SIZE) spans.shift();
        spans.push({ from: after, next });
      }
      return next === Number.POSITIVE_INFINITY ? [] : [next];
    }
  }
}

/** How many spans per cron trigger {@link nextFireTimes} remembers. */
const NEXT_MEMO_SIZE = 16;
/**
 * Per compiled cron trigger, spans `[from, next)` in which the next fire time is `next` (the first
 * one strictly after `from`, so the first one after any instant of the span too; +∞: none left).
 * Pure: safe to remember, dropped with the trigger.
 */
const nextMemo = new WeakMap<CompiledTrigger, { from: number; next: number }[]>();
