import { invalidArgument } from '../core/errors.js';
import { checkOptionNames, describe } from '../core/options.js';

/**
 * Validates a store constructor's options: a plain object, no unknown field (with a "did you
 * mean" hint), and exactly one of the two ways to reach the database (the caller's handle, or
 * something the store opens and owns).
 */
export function checkStoreOptions(
  store: string,
  options: unknown,
  known: readonly string[],
  oneOf: readonly [string, string],
): void {
  checkOptionNames(store, options, known);
  const given = oneOf.filter((f) => (options as Record<string, unknown>)[f] !== undefined);
  if (given.length !== 1)
    throw invalidArgument(`${store} needs exactly one of { ${oneOf[0]} } or { ${oneOf[1]} }`);
}

/**
 * Refuses `field` when it is set but `needs` is not: the option only shapes a connection the store
 * opens itself, so with the caller's own handle it would be silently ignored. `hint` says where
 * the caller sets the same thing instead.
 */
export function onlyWith(store: string, options: object, field: string, needs: string, hint: string): void {
  const given = options as Record<string, unknown>;
  if (given[field] !== undefined && given[needs] === undefined)
    throw invalidArgument(`${store} option ${JSON.stringify(field)} only applies with { ${needs} }; ${hint}`);
}

/** A positive whole number of ms, or the default when unset. */
export function timeoutOption(value: unknown, what: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0)
    throw invalidArgument(`${what} must be a positive whole number of ms; got ${describe(value)}`);
  return value;
}

/** A non-empty string option, or `undefined` when unset. */
export function stringOption(value: unknown, what: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '')
    throw invalidArgument(`${what} must be a non-empty string; got ${describe(value)}`);
  return value;
}

/** A boolean option, or the default when unset. */
export function booleanOption(value: unknown, what: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean')
    throw invalidArgument(`${what} must be true or false; got ${describe(value)}`);
  return value;
}
