import { invalidArgument } from '../../core/errors.js';

/** A method as decorators see it. */
export type Method = (this: unknown, ...args: unknown[]) => unknown;

/**
 * The method a method decorator was applied to; `INVALID_ARGUMENT` for anything else (a property,
 * an accessor, a class, a static method: instances are what Nest creates and discovery scans).
 */
export function methodOf(
  decorator: string,
  target: object,
  key: string | symbol | undefined,
  descriptor: PropertyDescriptor | undefined,
): Method {
  if (key === undefined || descriptor === undefined || typeof descriptor.value !== 'function')
    throw invalidArgument(`${decorator} decorates methods only (not classes, properties or accessors)`);
  if (typeof target === 'function') {
    throw invalidArgument(
      `${decorator} on static method ${target.name}.${String(key)}: decorate an instance method of a provider`,
    );
  }
  return descriptor.value as Method;
}
