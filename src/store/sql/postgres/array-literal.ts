/**
 * A PostgreSQL array literal (`{"a","b\"c",NULL,5}`) for an array parameter bound as
 * `$n::text[]` / `$n::bigint[]`: what pg would send for a JS array, built in one pass.
 *
 * pg's own encoder runs two `replace` passes over every element (and `prepareValue` on each):
 * here a key without `"` or `\` (nearly all of them) is copied once, and only what needs it is
 * escaped.
 * Elements are double-quoted, so commas, braces, spaces and the word NULL inside a string stay
 * data; only `"` and `\` take a backslash (the array input syntax, independent of
 * `standard_conforming_strings`, which governs SQL string constants, not parameters). Numbers are
 * written as themselves (safe integers: the store validates them), `null` as an unquoted NULL.
 */
export function pgArrayLiteral(values: readonly (string | number | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    if (v === null || v === undefined) out += 'NULL';
    else if (typeof v === 'number') out += String(v);
    else {
      // Plain replacement strings: a `$&` pattern or a function would cost more than two scans.
      let e = v;
      if (e.includes('\\')) e = e.replace(BACKSLASH, '\\\\');
      if (e.includes('"')) e = e.replace(QUOTE, '\\"');
      out += `"${e}"`;
    }
  }
  return `${out}}`;
}

const BACKSLASH = /\\/g;
const QUOTE = /"/g;
