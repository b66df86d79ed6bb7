import { invalidArgument } from '../core/errors.js';

/** Thrown from inside the replacer; becomes the `INVALID_ARGUMENT` of {@link jsonText}. */
class Unserialisable extends Error {}

/**
 * `JSON.stringify(value)` for data a handler gets back (`trigger({ data })`, a stored schedule's
 * `data`), refusing what JSON cannot hold — BigInt, cycles — and also what it would drop without a
 * word: a function or symbol (the handler would find the field missing). `what` names the value.
 *
 * @example
 * jsonText({ user: 42 }, 'trigger data'); // '{"user":42}'
 * jsonText({ send: () => {} }, 'trigger data'); // INVALID_ARGUMENT: trigger data: "send" is a function …
 */
export function jsonText(value: unknown, what: string): string {
  try {
    return JSON.stringify(value, (key, v: unknown) => {
      if (typeof v === 'function' || typeof v === 'symbol')
        throw new Unserialisable(
          `${key === '' ? 'the value' : JSON.stringify(key)} is a ${typeof v}, which JSON would drop; pass plain data (strings, numbers, booleans, null, arrays, objects)`,
        );
      return v;
    });
  } catch (err) {
    const detail = (err as Error).message.split('\n')[0];
    const problem = err instanceof Unserialisable ? `: ${detail}` : ` must be JSON-serialisable: ${detail}`;
    throw invalidArgument(what === '' ? problem.replace(/^:? /, '') : `${what}${problem}`);
  }
}
