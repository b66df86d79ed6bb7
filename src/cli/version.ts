/**
 * The package's version, read at run time from package.json (two levels above this file both in
 * `src/cli/` and in `dist/cli/`), so `oncely --version` can never disagree with what was installed.
 */
import { readFileSync } from 'node:fs';

export function packageVersion(): string {
  const url = new URL('../../package.json', import.meta.url);
  const pkg = JSON.parse(readFileSync(url, 'utf8')) as { version?: unknown };
  if (typeof pkg.version !== 'string') throw new Error(`no version in ${url.pathname}`);
  return pkg.version;
}
