import { invalidArgument } from './errors.js';

/**
 * Edit distance between two strings (insertions, deletions, substitutions and swaps of two
 * neighbouring characters each cost 1), for "did you mean" hints.
 */
export function editDistance(a: string, b: string): number {
  // rows[i][j] = distance between a[0, i) and b[0, j); only three rows are kept.
  let before: number[] = [];
  let previous: number[] = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current: number[] = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, before[j - 2]! + 1);
      current.push(best);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The candidate closest to `name`, when it is near enough to be a likely typo: at most one edit
 * for names up to 4 characters, else at most a third of the name's length; a case-insensitive
 * match always counts. `undefined` when nothing is that close (a hint must not mislead).
 */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  const sameLetters = candidates.find((c) => c.toLowerCase() === lower);
  if (sameLetters !== undefined) return sameLetters;
  const limit = name.length <= 4 ? 1 : Math.floor(name.length / 3);
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** ` (did you mean "prefix"?)` when a candidate is close to `name`, else an empty string. */
export function didYouMean(name: string, candidates: readonly string[]): string {
  const near = closestName(name, candidates);
  return near === undefined ? '' : ` (did you mean ${JSON.stringify(near)}?)`;
}

/**
 * Refuses an options object that is not a plain object, or that has a field outside `known`
 * (whatever its value, `undefined` included: a misspelt name is a mistake even when unset). The
 * message names the field, suggests the closest known name, and lists every known one.
 *
 * @example
 * checkOptionNames('SqliteStore', { prefx: 'app_' }, ['path', 'prefix']);
 * // INVALID_ARGUMENT: unknown SqliteStore option "prefx" (did you mean "prefix"?); allowed: path, prefix
 */
export function checkOptionNames(what: string, options: unknown, known: readonly string[]): void {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw invalidArgument(
      `${what} takes an options object { ${known.join(', ')} }; got ${describe(options)}`,
    );
  for (const field of Object.keys(options)) {
    if (!known.includes(field)) throw unknownOption(what, field, known);
  }
}

/** The `INVALID_ARGUMENT` for an unknown option `field` of `what`. */
export function unknownOption(what: string, field: string, known: readonly string[]) {
  return invalidArgument(
    `unknown ${what} option ${JSON.stringify(field)}${didYouMean(field, known)}; allowed: ${known.join(', ')}`,
  );
}

/** A short description of a bad value for messages: its type, or its JSON for short primitives. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return `${typeof value} ${String(value)}`;
  return typeof value;
}
