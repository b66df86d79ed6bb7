/**
 * The code in README.md and docs/*.md is real code (issue 10: an `await using` example was a
 * SyntaxError on Node.js 20; issue 31: `after: page.at(-1).id` failed under strict TypeScript).
 * Every fenced block must name its language, and by language:
 * - ```js: parses as an ES module on this Node.js (`node --check`); a block that opens a store
 *   (`openStore(`) is run with `node` as a user would paste it — on the default
 *   `sqlite:./oncely.db` in an empty directory, importing `oncely` (this checkout's built `dist/`,
 *   by package self-reference) — and must exit 0 on its own without writing to stderr; a block
 *   that starts a scheduler is stopped with SIGTERM once it has printed a line, as its handler
 *   expects. The application functions the examples call (`chargeCustomers`, …) are stubbed.
 * - ```ts: type-checked, all blocks in one `tsc --noEmit` run, each block a module of its own,
 *   under the project's strict settings (strict, noUncheckedIndexedAccess,
 *   exactOptionalPropertyTypes, verbatimModuleSyntax) against the built package's types
 *   (`import … from 'oncely'` resolves to this checkout's `dist/*.d.ts`). Legacy decorators are on
 *   for the NestJS examples. Application functions are declared `any`.
 * - ```yaml: a jobs file (a top-level `jobs:`) is validated by `oncely run`'s own parser.
 * - `ts fragment`, `js fragment`, `yaml fragment`: deliberately incomplete; skipped and counted.
 * - sh, text, java, json, http, sql: shown, not run.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseJobsFile } from '../src/cli/jobs-file.js';
import { ROOT, requireBuiltCli } from './fixtures/cli/cli.js';

interface Block {
  /** e.g. `docs/locks.md` */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  fragment: boolean;
  code: string;
}

/** Languages a block may have that are shown but never run. */
const SHOWN = new Set(['sh', 'text', 'java', 'json', 'http', 'sql']);
const CHECKED = new Set(['js', 'ts', 'yaml']);

/** The fenced blocks of a Markdown text (also indented ones, inside list items), indent removed. */
function codeBlocks(markdown: string, file: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!;
    const info = open[2]!.trim().split(/\s+/);
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && lines[j] !== `${indent}\`\`\``) body.push(lines[j++]!.slice(indent.length));
    if (j === lines.length) throw new Error(`${file}:${i + 1}: a code block is never closed`);
    blocks.push({
      file,
      line: i + 1,
      lang: info[0] ?? '',
      fragment: info.includes('fragment'),
      code: body.join('\n'),
    });
    i = j;
  }
  return blocks;
}

const FILES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];
const all = FILES.flatMap((file) => codeBlocks(readFileSync(join(ROOT, file), 'utf8'), file));
const checked = all.filter((b) => CHECKED.has(b.lang) && !b.fragment);
const fragments = all.filter((b) => CHECKED.has(b.lang) && b.fragment);
const jsBlocks = checked.filter((b) => b.lang === 'js');
const tsBlocks = checked.filter((b) => b.lang === 'ts');
const yamlBlocks = checked.filter((b) => b.lang === 'yaml');

/** A file name that says where a block comes from: `docs-locks-md-L42`. */
const slug = (b: Block) => `${b.file.replace(/[^A-Za-z0-9]+/g, '-')}-L${b.line}`;
const where = (b: Block) => `${b.file}:${b.line}`;

/** What the JavaScript examples call but leave to the application. */
const JS_STUBS = `
globalThis.chargeCustomers = async ({ fencingToken, signal }) => ({ fencingToken, aborted: signal.aborted });
globalThis.sendReport = async () => {};
globalThis.syncInventory = async () => {};
globalThis.rebuildIndex = async () => {};
`;

/** What the TypeScript examples call but leave to the application (declared loosely on purpose). */
const TS_GLOBALS = `
declare function chargeCustomers(...args: any[]): Promise<any>;
declare function sendReport(...args: any[]): Promise<any>;
declare function syncInventory(...args: any[]): Promise<any>;
declare function mailReport(...args: any[]): Promise<any>;
declare function purgeOldRows(...args: any[]): Promise<any>;
declare function bill(...args: any[]): Promise<any>;
declare function sync(...args: any[]): Promise<any>;
declare function poll(...args: any[]): Promise<any>;
declare function refreshPrices(...args: any[]): Promise<any>;
declare const existingPgPool: import('pg').Pool;
`;

// Inside the package, so that `import … from 'oncely'` resolves to this checkout (self-reference).
const artifacts = join(ROOT, '.test-artifacts', 'doc-examples');
const work = mkdtempSync(join(tmpdir(), 'oncely-docs-'));
beforeAll(() => {
  requireBuiltCli();
  rmSync(artifacts, { recursive: true, force: true });
  mkdirSync(artifacts, { recursive: true });
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `node file` in `cwd`; with `stopWhenReady`, sends SIGTERM after its first line of output. */
function runNode(args: string[], cwd: string, stopWhenReady = false, timeoutMs = 30_000): Promise<Exit> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ONCELY_')));
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    if (stopWhenReady && stdout.includes('\n')) child.kill('SIGTERM');
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    }),
  );
}

describe('code blocks of README.md and docs/*.md', () => {
  it('every block names a language this test knows, and fragments are few', () => {
    const unknown = all.filter((b) => !CHECKED.has(b.lang) && !SHOWN.has(b.lang)).map(where);
    expect(unknown, 'blocks without a known language (tag them: js, ts, yaml, sh, text, …)').toEqual([]);
    console.log(
      `doc examples: ${jsBlocks.length} js (${jsBlocks.filter((b) => b.code.includes('openStore(')).length} run), ` +
        `${tsBlocks.length} ts type-checked, ${yamlBlocks.length} yaml validated, ` +
        `${fragments.length} fragments skipped (${fragments.map(where).join(', ')})`,
    );
    expect(fragments.length, 'fragments skipped').toBeLessThanOrEqual(4);
  });

  it('has the examples this test is for (so retagging them cannot skip it)', () => {
    const readme = checked.filter((b) => b.file === 'README.md').map((b) => b.code);
    for (const api of ['withLock(', 'scheduler.define(', 'schedules.upsert(', 'once(', 'OncelyModule'])
      expect(readme.join('\n'), `a checked README block using ${api}`).toContain(api);
    const code = checked.map((b) => b.code).join('\n');
    for (const api of [
      'store.tryLock(',
      'fireTimes(',
      'new PostgresStore(',
      'describeStore(',
      'checkHistory(',
      'explore(',
      'historyRetention',
      'page.at(-1)',
    ])
      expect(code, `a checked block using ${api}`).toContain(api);
    // What Node.js 20 cannot parse must not be shown as JavaScript to paste (prose may name it).
    expect(jsBlocks.map((b) => b.code).join('\n')).not.toMatch(/^\s*(await )?using /m);
  });

  for (const block of jsBlocks) {
    const runs = block.code.includes('openStore(');
    it(`${where(block)} ${runs ? 'runs with node and exits 0' : 'parses as an ES module'}`, async () => {
      const file = join(artifacts, `${slug(block)}.mjs`);
      writeFileSync(file, runs ? `${JS_STUBS}${block.code}\n` : `${block.code}\n`);
      const check = await runNode(['--check', file], ROOT);
      expect(check.code, `node --check ${where(block)}\n${check.stderr}`).toBe(0);
      if (!runs) return;
      const cwd = join(work, slug(block));
      mkdirSync(cwd);
      const r = await runNode([file], cwd, block.code.includes("'SIGTERM'"));
      expect(r.stderr, `${where(block)} wrote to stderr`).toBe('');
      expect({ code: r.code, signal: r.signal }, `${where(block)}\n${r.stdout}`).toEqual({
        code: 0,
        signal: null,
      });
      if (block.code.includes('// 3 0 3')) {
        // What the comments in the stored-schedules example say it prints.
        expect(r.stdout).toMatch(/^3 0 3$/m);
        expect(r.stdout).toMatch(/^true$/m);
        expect(r.stdout).toContain("id: 'report:user-42'");
      }
    });
  }

  it(`the ${tsBlocks.length} ts blocks type-check under the project's strict settings`, async () => {
    const dir = join(artifacts, 'ts');
    mkdirSync(dir, { recursive: true });
    const names = new Map<string, Block>();
    for (const block of tsBlocks) {
      // The code starts on the fence's next line, so an error's line + the fence line = the Markdown line.
      // `export {}` makes every block a module of its own (top-level await, no shared names).
      names.set(`${slug(block)}.ts`, block);
      writeFileSync(join(dir, `${slug(block)}.ts`), `${block.code}\nexport {};\n`);
    }
    writeFileSync(join(dir, 'app-globals.d.ts'), TS_GLOBALS);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022', 'ESNext.Disposable'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noUncheckedIndexedAccess: true,
          exactOptionalPropertyTypes: true,
          verbatimModuleSyntax: true,
          isolatedModules: true,
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          skipLibCheck: true,
          noEmit: true,
          types: ['node'],
        },
        include: ['./*.ts'],
      }),
    );
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const out = await promisify(execFile)(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], {
      cwd: dir,
      maxBuffer: 16 * 1024 * 1024,
    }).then(
      () => '',
      (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
    // Name each error by its Markdown file and line.
    const errors = out
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => {
        const m = /^(?:.*[/\\])?([^/\\(]+\.ts)\((\d+),(\d+)\): (.*)$/.exec(l);
        const block = m ? names.get(m[1]!) : undefined;
        return block ? `${block.file}:${block.line + Number(m![2])}: ${m![4]}` : l;
      });
    expect(errors).toEqual([]);
  }, 120_000);

  for (const block of yamlBlocks) {
    const isJobsFile = (() => {
      const data = parseYaml(block.code) as unknown;
      return data !== null && typeof data === 'object' && 'jobs' in data;
    })();
    it(`${where(block)} ${isJobsFile ? "passes oncely run's jobs-file validation" : 'is YAML'}`, () => {
      if (!isJobsFile) return;
      const path = join(work, `${slug(block)}.yaml`);
      // A job's `cwd` must be an existing directory next to the file.
      const jobs = (parseYaml(block.code) as { jobs: { cwd?: unknown }[] }).jobs;
      for (const job of jobs)
        if (typeof job.cwd === 'string') mkdirSync(join(dirname(path), job.cwd), { recursive: true });
      writeFileSync(path, block.code);
      expect(() => parseJobsFile(block.code, path), where(block)).not.toThrow();
    });
  }
});
