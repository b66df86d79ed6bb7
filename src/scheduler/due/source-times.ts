import { nextFireTimes } from '../../schedule/fire-times.js';
import { spreadGrace } from '../control/spread.js';
import type { Source } from '../internal-types.js';

/** The spread grace of the source's fire time `fireTime` (a quarter of the gap to the next one, at most 1 s). */
export function graceAt(source: Source, fireTime: number): number {
  const next = nextAfter(source, fireTime);
  return spreadGrace(next === undefined ? undefined : next - fireTime);
}

/** The source's next fire time after its cursor (or after now, before its first tick), memoised on the source. */
export function nextDue(source: Source, now: number): number | undefined {
  const after = source.cursor ?? now;
  if (source.next?.after !== after)
    source.next =
      source.ahead?.after === after
        ? source.ahead
        : { after, at: nextFireTimes(source.trigger, after, 1)[0] };
  return source.next.at;
}

/** The source's first fire time after `t`, from either memo or computed into `ahead`. */
function nextAfter(source: Source, t: number): number | undefined {
  if (source.next?.after === t) return source.next.at;
  if (source.ahead?.after !== t) source.ahead = { after: t, at: nextFireTimes(source.trigger, t, 1)[0] };
  return source.ahead.at;
}
