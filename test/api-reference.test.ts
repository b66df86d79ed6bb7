/**
 * The API reference (issue 31): `npm run docs` builds docs/api/ with TypeDoc from every entry point
 * of package.json "exports", and the package ships it.
 * - typedoc.jsonc documents exactly the files "exports" points at (dist/x.d.ts ← src/x.ts), each
 *   under the name a user imports (`@module oncely/redis` in its module comment);
 * - the built reference has an index and one page per entry point, and `npm pack` takes all of it
 *   (docs/api/ is not committed: `prepare` builds it on install and pack, CI builds it strictly
 *   before the tests).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from './fixtures/cli/cli.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { types: string }>;
};
const config = ts.parseConfigFileTextToJson(
  'typedoc.jsonc',
  readFileSync(join(ROOT, 'typedoc.jsonc'), 'utf8'),
).config as { entryPoints: string[]; out: string };

/** Subpath (`.`, `./redis`) → the source file its types come from, and the name users import. */
const entries = Object.entries(pkg.exports)
  .filter((e): e is [string, { types: string }] => typeof e[1] === 'object')
  .map(([subpath, target]) => ({
    name: subpath === '.' ? 'oncely' : `oncely/${subpath.slice(2)}`,
    source: target.types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts'),
  }));

describe('API reference', () => {
  it('documents every entry point of package.json exports, and nothing else', () => {
    expect(entries.length).toBeGreaterThan(5);
    expect([...config.entryPoints].sort()).toEqual(entries.map((e) => e.source).sort());
    expect(config.out).toBe('docs/api');
  });

  it('names each entry point as users import it (@module)', () => {
    for (const { name, source } of entries) {
      const text = readFileSync(join(ROOT, source), 'utf8');
      // TypeDoc takes the module comment only from the file's first comment.
      const first = /^\s*\/\*\*([\s\S]*?)\*\//.exec(text);
      expect(first?.[1], `${source}: first comment`).toMatch(new RegExp(`@module ${name}\\s`));
    }
  });

  it('ships the built reference in the package', async () => {
    const index = join(ROOT, 'docs', 'api', 'README.md');
    expect(existsSync(index), 'docs/api/README.md: run `npm run docs` first').toBe(true);
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
    });
    const [packed] = JSON.parse(stdout) as [{ files: { path: string }[] }];
    const files = new Set(packed.files.map((f) => f.path));
    const pages = ['docs/api/README.md', ...entries.map((e) => `docs/api/${e.name}.md`)];
    expect(pages.filter((p) => !files.has(p))).toEqual([]);
  });
});
