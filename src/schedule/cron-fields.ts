/**
 * A plain-words check of a cron pattern's shape before croner compiles it: the field count, and
 * every number against its field's range. croner's own messages count days and months from 0
 * (`0 0 32 * *` reads "Invalid value for day: 31"), which names the wrong value.
 */

/** Name and range of each field of a 5-field pattern; a 6-field one has seconds first. */
const FIELDS: readonly (readonly [string, number, number])[] = [
  ['minute', 0, 59],
  ['hour', 0, 23],
  ['day-of-month', 1, 31],
  ['month', 1, 12],
  ['day-of-week', 0, 7],
];
const SECOND = ['second', 0, 59] as const;

/**
 * What is wrong with the shape of `pattern`, or `undefined` when croner should judge it (names,
 * `L`, `W`, `#`, `?`, steps and nicknames such as `@daily` are left to croner).
 *
 * @example
 * cronShapeProblem('0 0 32 * *'); // 'day-of-month 32 is out of range (1-31)'
 */
export function cronShapeProblem(pattern: string): string | undefined {
  const text = pattern.trim();
  if (text.startsWith('@')) return undefined;
  const parts = text.split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6)
    return `it has ${parts.length} field${parts.length === 1 ? '' : 's'}; use 5 (minute hour day-of-month month day-of-week) or 6 (second first)`;
  const fields = parts.length === 6 ? [SECOND, ...FIELDS] : FIELDS;
  for (const [i, part] of parts.entries()) {
    const [name, min, max] = fields[i]!;
    for (const item of part.split(',')) {
      // `a-b/step`: the step is a count, not a value of the field.
      const values = item.split('/')[0]!.split('-');
      for (const value of values) {
        // `5#2` (the second Friday), `15W` (nearest weekday), `5L` (last Friday): the number is the field's.
        const number = /^(\d+)(?:W|L|#\d+)?$/i.exec(value)?.[1];
        if (number !== undefined && (Number(number) < min || Number(number) > max))
          return `${name} ${number} is out of range (${min}-${max})`;
      }
    }
  }
  return undefined;
}
