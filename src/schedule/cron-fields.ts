/**
 * A plain-words check of a cron pattern's shape before croner compiles it: the field count, every
 * number against its field's range, and every name against its field's names. croner's own
 * messages count days and months from 0 (`0 0 32 * *` reads "Invalid value for day: 31") and
 * echo its rewrites (`MON-FRY` reads "configuration entry 5 (1-FRY) contains illegal
 * characters"), which name the wrong value.
 */
import { didYouMean } from '../core/options.js';

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

/** The names a field takes besides numbers, and how its allowed values read in a message. */
const NAMES: Record<string, { names: readonly string[]; allowed: string; noun: string }> = {
  'day-of-month': { names: ['L', 'LW'], allowed: '1-31, L (last day) or LW', noun: 'a day of the month' },
  month: { names: MONTHS, allowed: '1-12 or JAN-DEC', noun: 'a month' },
  'day-of-week': { names: DAYS, allowed: '0-7 (0 and 7 are Sunday) or SUN-SAT', noun: 'a day of the week' },
};

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
        const word = /^([a-z]+)(?:#\d+|L)?$/i.exec(value)?.[1];
        if (word !== undefined) {
          const field = NAMES[name];
          if (!field?.names.includes(word.toUpperCase()))
            return field
              ? `${name} ${JSON.stringify(word)} is not ${field.noun}: use ${field.allowed}${didYouMean(word.toUpperCase(), field.names)}`
              : `${name} ${JSON.stringify(word)} is not a number: use ${min}-${max}`;
        } else if (number === undefined && !/^[*?]?$/.test(value))
          return `${name} ${JSON.stringify(part)} is not valid: use ${NAMES[name]?.allowed ?? `${min}-${max}`}, *, lists (a,b), ranges (a-b) and steps (*/n)`;
      }
    }
  }
  return undefined;
}
