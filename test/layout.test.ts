/**
 * The house rules of src/ that a reviewer would otherwise have to count by hand: no file over
 * 400 lines, and no import circle — type-only imports included, since a circle of types still
 * ties two rooms together (and a value import added later turns it into a load-order bug).
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Relative imports and re-exports of a file, as absolute .ts paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/gms))
    found.push(resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts')));
  return found;
}

/** Every import circle, each as the list of files around it (first = last). */
function importCircles(files: string[]): string[][] {
  const graph = new Map(files.map((f) => [f, importsOf(f).filter((d) => d !== f)]));
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const circles: string[][] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const dep of graph.get(file) ?? []) {
      if (!graph.has(dep)) continue;
      if (state.get(dep) === 'open') circles.push([...stack.slice(stack.indexOf(dep)), dep]);
      else if (state.get(dep) === undefined) visit(dep);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const f of files) if (state.get(f) === undefined) visit(f);
  return circles;
}

describe('src/ layout', () => {
  const files = sourceFiles(SRC);

  it('has no file over 400 lines', () => {
    const long = files
      .map((f) => ({ file: relative(SRC, f), lines: readFileSync(f, 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > 400);
    expect(long).toEqual([]);
  });

  it('has no import circle, type-only imports included', () => {
    const circles = importCircles(files).map((c) => c.map((f) => relative(SRC, f)).join(' -> '));
    expect(circles).toEqual([]);
  });

  it('the circle check finds a type-only circle', () => {
    // The check must be able to fail: a pair of files importing each other's types.
    const dir = mkdtempSync(join(tmpdir(), 'oncely-layout-'));
    const a = join(dir, 'a.ts');
    const b = join(dir, 'b.ts');
    const c = join(dir, 'c.ts');
    writeFileSync(a, "import type { B } from './b.js';\nexport interface A { b?: B }\n");
    writeFileSync(b, "import type {\n  A,\n} from './a.js';\nexport interface B { a?: A }\n");
    writeFileSync(c, "export { type A } from './a.js';\n");
    expect(importCircles([a, b, c])).toEqual([[a, b, a]]);
    writeFileSync(b, 'export interface B { n: number }\n');
    expect(importCircles([a, b, c])).toEqual([]);
  });
});
