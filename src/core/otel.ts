import { createRequire } from 'node:module';
import type * as Api from '@opentelemetry/api';

/** The `@opentelemetry/api` module. */
export type OtelApi = typeof Api;

const load = createRequire(import.meta.url);
/** `null`: looked for and not installed. */
let cached: OtelApi | null | undefined;

/**
 * `@opentelemetry/api` (an optional peer dependency), loaded on first use; `undefined` when it is
 * not installed, and oncely then traces nothing. One module instance per process either way: the
 * package keeps its tracer provider and context manager on `globalThis`, so an application's
 * `import` of it (ESM or CommonJS) and this `require` share them.
 */
export function loadOtel(): OtelApi | undefined {
  if (cached === undefined) {
    try {
      cached = load('@opentelemetry/api') as OtelApi;
    } catch (err) {
      const missing =
        (err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' &&
        (err as Error).message.includes("'@opentelemetry/api'");
      if (!missing) throw err;
      cached = null;
    }
  }
  return cached ?? undefined;
}
