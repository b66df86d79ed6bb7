/**
 * The documentation points only at files that exist (issue 31: `oncely --help` ended with
 * `Docs: docs/cli.md`, a path no installed package had):
 * - every `docs/<name>.md` that src/ mentions (messages and comments) is a file of docs/;
 * - messages that send a user to a guide name it through `docPath`, which resolves to this
 *   package's own docs/ (the tarball test checks the same from an installed copy);
 * - every relative link of README.md and docs/*.md leads to a file of this checkout, and its
 *   `#anchor`, if any, to a heading of that file (GitHub's heading ids).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { docPath } from '../src/core/docs.js';
import { ROOT } from './fixtures/cli/cli.js';

function filesUnder(dir: string, ext: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith(ext))
    .map((f) => join(dir, f));
}

/** GitHub's id of a heading: lower case, punctuation dropped, spaces to hyphens. */
function headingId(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function headingIds(markdown: string): Set<string> {
  const ids = new Set<string>();
  let inCode = false;
  for (const line of markdown.split('\n')) {
    if (/^ *```/.test(line)) inCode = !inCode;
    const m = inCode ? null : /^#{1,6} (.*)$/.exec(line);
    if (!m) continue;
    const base = headingId(m[1]!);
    let id = base;
    for (let n = 1; ids.has(id); n++) id = `${base}-${n}`;
    ids.add(id);
  }
  return ids;
}

const markdownFiles = [
  join(ROOT, 'README.md'),
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(ROOT, 'docs', f)),
];

describe('paths in the documentation and in messages', () => {
  it('every docs/*.md that src/ mentions exists', () => {
    const missing: string[] = [];
    let mentions = 0;
    for (const file of filesUnder(join(ROOT, 'src'), '.ts')) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/docs\/([A-Za-z0-9_.-]+\.md)/g)) {
        mentions++;
        if (!existsSync(join(ROOT, 'docs', m[1]!))) missing.push(`${relative(ROOT, file)}: docs/${m[1]}`);
      }
      // docPath('x.md') names a guide by its file name alone.
      for (const m of text.matchAll(/docPath\('([^']+)'\)/g)) {
        mentions++;
        if (!existsSync(docPath(m[1]!))) missing.push(`${relative(ROOT, file)}: docPath('${m[1]}')`);
      }
    }
    expect(mentions).toBeGreaterThan(0);
    expect(missing).toEqual([]);
  });

  it('docPath resolves into this package', () => {
    expect(docPath('cli.md')).toBe(join(ROOT, 'docs', 'cli.md'));
  });

  it('every relative link of README.md and docs/*.md leads to a file and heading that exist', () => {
    const broken: string[] = [];
    for (const file of markdownFiles) {
      const text = readFileSync(file, 'utf8');
      // Links outside code blocks: [text](target) and ![alt](target).
      const prose = text.replace(/^ *```[\s\S]*?^ *```$/gm, '');
      for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const resolved = path === '' ? file : join(dirname(file), path);
        const where = `${relative(ROOT, file)}: (${target})`;
        if (!existsSync(resolved)) {
          broken.push(`${where}: no such file`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith('.md')) {
          if (!headingIds(readFileSync(resolved, 'utf8')).has(anchor))
            broken.push(`${where}: no such heading`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
