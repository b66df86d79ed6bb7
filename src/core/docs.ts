/**
 * Where the guides are: `docs/` ships in the package (package.json "files"), two levels above this
 * file both in `src/core/` and in `dist/core/`. Messages that send the user to a guide name its
 * absolute path, so the path exists wherever oncely is installed (a project, a global install, a
 * clone).
 *
 * @example
 * `see ${docPath('redis.md')} (ACLs)`   // /app/node_modules/oncely/docs/redis.md
 */
import { fileURLToPath } from 'node:url';

export function docPath(file: string): string {
  return fileURLToPath(new URL(`../../docs/${file}`, import.meta.url));
}
