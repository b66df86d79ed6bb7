import { invalidArgument } from '../../core/errors.js';

/**
 * Validates a SQL store's constructor options: no unknown field, exactly one of the two ways to
 * reach the database (the caller's handle, or something we open and own), a sane timeout.
 */
export function checkStoreOptions(
  store: string,
  options: object | undefined,
  known: readonly string[],
  oneOf: readonly [string, string],
): void {
  if (options === null || typeof options !== 'object')
    throw invalidArgument(`${store} takes an options object`);
  for (const field of Object.keys(options)) {
    if (!known.includes(field)) {
      throw invalidArgument(`unknown ${store} option ${JSON.stringify(field)}; known: ${known.join(', ')}`);
    }
  }
  const given = oneOf.filter((f) => (options as Record<string, unknown>)[f] !== undefined);
  if (given.length !== 1)
    throw invalidArgument(`${store} needs exactly one of { ${oneOf[0]} } or { ${oneOf[1]} }`);
}

/** A positive whole number of ms, or the default. */
export function timeoutOption(value: number | undefined, what: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value <= 0)
    throw invalidArgument(`${what} must be a positive whole number of ms; got ${value}`);
  return value;
}
