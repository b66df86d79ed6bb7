import { prefixUpperBound } from '../validate.js';
import type { LuaScript } from './script.js';
import { SCRIPTS } from './scripts.js';

/** Index entries one count script walks at most, and records one of its sweeps removes (count.lua.ts). */
export const COUNT_WALK = 1_000;

/** Runs one of the store's scripts: one EVALSHA (RedisStore.run). */
export type RunScript = (script: LuaScript, args: (string | number)[]) => Promise<unknown>;

/**
 * How many live records have a key starting with `prefix`, in calls of the count script that walk
 * at most COUNT_WALK index entries each, other clients served in between (./count.lua.ts says
 * what each reply means and when the answer is one snapshot): a long range is walked on from a
 * cursor and summed; many expired, unswept records are swept first, a batch a call, and the count
 * asked again. Ends: a range walk moves its cursor forward every call, and every sweep leaves
 * fewer expired records than the call before it saw (new ones expire far slower than 1,000 a call).
 */
export async function countRecords(run: RunScript, prefix: string): Promise<number> {
  const upper = prefixUpperBound(prefix);
  const high = upper === undefined ? '+' : `(${upper}`;
  let low = prefix === '' ? '-' : `[${prefix}`;
  let counted = 0;
  let resuming = 0;
  for (;;) {
    const reply = (await run(SCRIPTS.count, [low, high, prefix, COUNT_WALK, resuming])) as [number, string?];
    const [n, cursor] = reply;
    if (n < 0) {
      await run(SCRIPTS.sweep, [COUNT_WALK]);
      continue;
    }
    counted += n;
    if (cursor === undefined) return counted;
    low = `(${cursor}`;
    resuming = 1;
  }
}
