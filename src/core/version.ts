/**
 * The package's version, read once at run time from package.json (two levels above this file both
 * in `src/core/` and in `dist/core/`), so `oncely --version` and the version in node heartbeats
 * can never disagree with what was installed.
 */
import { readFileSync } from 'node:fs';

let cached: string | undefined;

export function packageVersion(): string {
  if (cached !== undefined) return cached;
  const url = new URL('../../package.json', import.meta.url);
  const pkg = JSON.parse(readFileSync(url, 'utf8')) as { version?: unknown };
  if (typeof pkg.version !== 'string') throw new Error(`no version in ${url.pathname}`);
  cached = pkg.version;
  return cached;
}
