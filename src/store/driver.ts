import { createRequire } from 'node:module';
import { OncelyError } from '../core/errors.js';

const load = createRequire(import.meta.url);

/**
 * Loads a database driver (an optional peer dependency) at the moment a store opens its own
 * connection, not when its module is imported: `oncely/postgres` & co. import without their
 * driver, and a store built on the caller's own client never loads it. Every driver oncely uses
 * is a CommonJS package, so this is the same module instance an `import` of it gives.
 *
 * Not installed: `INVALID_ARGUMENT` saying what to install (`scheme` as in a store URL).
 */
export function loadDriver<T>(specifier: string, scheme: string): T {
  const pkg = specifier.split('/')[0]!;
  try {
    return load(specifier) as T;
  } catch (err) {
    const missing =
      (err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' &&
      (err as Error).message.includes(`'${specifier}'`);
    if (!missing) throw err;
    throw new OncelyError(
      'INVALID_ARGUMENT',
      `the ${scheme} store needs the '${pkg}' package; install it with: npm install ${pkg}`,
      { cause: err },
    );
  }
}
