/**
 * package.json says exactly what oncely needs (issue 29, finding 7):
 * - every peer range is a caret range of the one major the tests run against (the version in
 *   devDependencies): no `>=8`, `*`, `x` or `||`, which would accept majors nobody has tested;
 * - every package `src/` imports (statically, by `import()`, `require`, or the lazy `load`/
 *   `loadDriver` of drivers and optional modules) is declared, in `dependencies` or as a peer;
 * - every production dependency is imported by `src/`, or is a pin that docs/security.md explains.
 * Reads the sources with TypeScript's parser (comments and JSDoc examples are not imports).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import semver from 'semver';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
interface Manifest {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
}
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;

/** Production dependencies src/ never imports, each kept for a reason docs/security.md gives. */
const PINS = ['light-my-request'];

/** Why each peer range is wrong, if it is: one entry per bad range. */
function peerProblems(m: Manifest): string[] {
  const problems: string[] = [];
  for (const [name, range] of Object.entries(m.peerDependencies)) {
    const tested = m.devDependencies[name];
    const caret = /^\^(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(range);
    if (!caret) problems.push(`${name}: ${range} is not a caret range of one major (^N.M.P)`);
    else if (tested === undefined) problems.push(`${name}: no devDependency to test the peer against`);
    else if (!semver.satisfies(tested, range))
      problems.push(`${name}: ${range} does not accept the tested version ${tested}`);
    else if (semver.major(tested) !== Number(caret[1]))
      problems.push(`${name}: ${range} is not the tested major (${tested})`);
  }
  return problems;
}

/** The package name of a bare specifier (`@scope/name/sub` -> `@scope/name`), or undefined. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('node:') || specifier.startsWith('/'))
    return undefined;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
  return builtinModules.includes(name) ? undefined : name;
}

/** Every module specifier a source file names in code (imports, import types, and module loads). */
function specifiersOf(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier)
      found.push((node.moduleSpecifier as ts.StringLiteral).text);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument))
      found.push((node.argument.literal as ts.StringLiteral).text);
    else if (ts.isCallExpression(node) && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      const callee = node.expression;
      const named = ts.isIdentifier(callee) && ['require', 'load', 'loadDriver'].includes(callee.text);
      if (callee.kind === ts.SyntaxKind.ImportKeyword || named) found.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('package.json', () => {
  it('bounds every peer to the major the tests run against', () => {
    expect(peerProblems(pkg)).toEqual([]);
    // The open ranges of before (issue 29) are refused.
    const open = { ...pkg, peerDependencies: { pg: '>=8', ioredis: '5.x', vitest: '^2 || ^3', etcd3: '*' } };
    expect(peerProblems(open)).toHaveLength(4);
    expect(peerProblems({ ...pkg, peerDependencies: { pg: '^7.0.0' } })).toHaveLength(1);
  });

  it('declares every package src/ imports, and depends on nothing it neither imports nor documents', () => {
    const imported = new Set<string>();
    for (const file of sourceFiles(join(ROOT, 'src')))
      for (const specifier of specifiersOf(file)) {
        const name = packageOf(specifier);
        if (name !== undefined) imported.add(name);
      }
    expect(imported.has('fastify')).toBe(true); // the scan sees imports
    expect(imported.has('ioredis')).toBe(true); // and drivers loaded lazily
    const declared = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)]);
    expect(
      [...imported].filter((name) => !declared.has(name)),
      'imported but not declared',
    ).toEqual([]);
    const unused = Object.keys(pkg.dependencies).filter(
      (name) => !imported.has(name) && !PINS.includes(name),
    );
    expect(
      unused,
      'production dependencies src/ does not import (a pin goes in PINS and docs/security.md)',
    ).toEqual([]);
    const security = readFileSync(join(ROOT, 'docs', 'security.md'), 'utf8');
    for (const pin of PINS) {
      expect(pkg.dependencies, pin).toHaveProperty([pin]);
      expect(imported.has(pin), `${pin} is imported now: not a pin any more`).toBe(false);
      expect(security, `docs/security.md explains the pin ${pin}`).toContain(`\`${pin}\``);
    }
  });
});
