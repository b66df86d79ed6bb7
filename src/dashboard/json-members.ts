/** Where one top-level member's value lies in the text: `text.slice(start, end)`. */
export interface MemberSpan {
  start: number;
  end: number;
}

const SPACE = /[ \t\n\r]*/y;
const PRIMITIVE = /[^,}\]\s]*/y;
const STRUCTURE = /["{}[\]]/g;

function skipSpace(text: string, at: number): number {
  SPACE.lastIndex = at;
  SPACE.test(text);
  return SPACE.lastIndex;
}

/**
 * The index after the string whose opening quote is at `at`, or -1. A quote closes the string
 * when an even number of backslashes precedes it; each backslash is looked at once (the runs
 * before different quotes do not overlap), so this is linear in the string's length.
 */
function stringEnd(text: string, at: number): number {
  for (let from = at + 1; ; ) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return -1;
    let slashes = 0;
    while (text.charCodeAt(quote - 1 - slashes) === 92) slashes++;
    if (slashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** The index after the value that starts at `at` (no leading space), or -1. */
function valueEnd(text: string, at: number): number {
  const c = text.charCodeAt(at);
  if (c === 34) return stringEnd(text, at);
  if (c === 123 || c === 91) {
    // Jump from one structural character to the next; strings are skipped whole.
    let depth = 0;
    STRUCTURE.lastIndex = at;
    for (let m = STRUCTURE.exec(text); m !== null; m = STRUCTURE.exec(text)) {
      const ch = m[0];
      if (ch === '"') {
        const end = stringEnd(text, m.index);
        if (end < 0) return -1;
        STRUCTURE.lastIndex = end;
      } else if (ch === '{' || ch === '[') depth++;
      else if (--depth === 0) return m.index + 1;
    }
    return -1;
  }
  PRIMITIVE.lastIndex = at;
  PRIMITIVE.test(text);
  return PRIMITIVE.lastIndex > at ? PRIMITIVE.lastIndex : -1;
}

/**
 * The top-level members of a JSON object text, as spans of the text, without building any value:
 * a caller parses the small members it wants and never the large one (a stored schedule's `data`
 * may be megabytes). One pass, no allocation per nested value. A later duplicate name wins, as
 * in JSON.parse. `undefined` when the text is not one object as far as this scan checks: quotes,
 * nesting depth and separators; what lies inside a span (escapes, literals, numbers, matching
 * bracket kinds) is checked only when the caller parses it.
 */
export function topLevelMembers(text: string): Map<string, MemberSpan> | undefined {
  let at = skipSpace(text, 0);
  if (text.charCodeAt(at) !== 123) return undefined;
  const members = new Map<string, MemberSpan>();
  at = skipSpace(text, at + 1);
  if (text.charCodeAt(at) === 125) return skipSpace(text, at + 1) === text.length ? members : undefined;
  for (;;) {
    if (text.charCodeAt(at) !== 34) return undefined;
    const nameEnd = stringEnd(text, at);
    if (nameEnd < 0) return undefined;
    const name = JSON.parse(text.slice(at, nameEnd)) as string;
    at = skipSpace(text, nameEnd);
    if (text.charCodeAt(at) !== 58) return undefined;
    const start = skipSpace(text, at + 1);
    const end = valueEnd(text, start);
    if (end < 0) return undefined;
    members.set(name, { start, end });
    at = skipSpace(text, end);
    const next = text.charCodeAt(at);
    if (next === 125) return skipSpace(text, at + 1) === text.length ? members : undefined;
    if (next !== 44) return undefined;
    at = skipSpace(text, at + 1);
  }
}
