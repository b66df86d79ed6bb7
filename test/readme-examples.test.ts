/**
 * The README's JavaScript examples are real programs (issue 10: an `await using` example was a
 * SyntaxError on Node.js 20). Every ```js block of README.md must parse as an ES module on this
 * Node.js (`node --check`), and every one that opens a store (`openStore(`) is run with `node`
 * as a user would paste it: on the default `sqlite:./oncely.db` in an empty directory, importing
 * `oncely` (this checkout's built `dist/`, by package self-reference), exiting 0 on its own — a
 * block that starts a scheduler is stopped with SIGTERM once it has said so, as its handler
 * expects. The application functions the examples call (`chargeCustomers`, …) are stubbed.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, requireBuiltCli } from './fixtures/cli/cli.js';

/** The ```js blocks of a Markdown text (also indented ones, inside list items), indent removed. */
function jsBlocks(markdown: string): { line: number; code: string }[] {
  const blocks: { line: number; code: string }[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```js\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && lines[j] !== `${indent}\`\`\``) body.push(lines[j++]!.slice(indent.length));
    if (j === lines.length) throw new Error(`README.md:${i + 1}: a js block is never closed`);
    blocks.push({ line: i + 1, code: body.join('\n') });
    i = j;
  }
  return blocks;
}

/** What the examples call but leave to the application. */
const STUBS = `
globalThis.chargeCustomers = async ({ fencingToken, signal }) => ({ fencingToken, aborted: signal.aborted });
globalThis.sendReport = async () => {};
globalThis.syncInventory = async () => {};
`;

const blocks = jsBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
// Inside the package, so that `import … from 'oncely'` resolves to this checkout (self-reference).
const scripts = join(ROOT, '.test-artifacts', 'readme-examples');
const work = mkdtempSync(join(tmpdir(), 'oncely-readme-'));
beforeAll(() => {
  requireBuiltCli();
  mkdirSync(scripts, { recursive: true });
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

describe('README.md JavaScript examples', () => {
  it('has the examples this test is for (so retagging them cannot skip it)', () => {
    const all = blocks.map((b) => b.code).join('\n');
    for (const api of [
      'withLock(',
      'store.tryLock(',
      'scheduler.define(',
      'schedules.upsert(',
      'fireTimes(',
      'new PostgresStore(',
      'describeStore(',
    ]) {
      expect(all, `a js block using ${api}`).toContain(api);
    }
    // What Node.js 20 cannot parse must not be shown as code to paste (prose may name it).
    expect(all).not.toMatch(/^\s*(await )?using /m);
  });

  for (const [n, block] of blocks.entries()) {
    const name = `block-${String(n + 1).padStart(2, '0')}-line-${block.line}.mjs`;
    const runs = block.code.includes('openStore(');
    it(`README.md:${block.line} ${runs ? 'runs with node and exits 0' : 'parses as an ES module'}`, async () => {
      const file = join(scripts, name);
      writeFileSync(file, runs ? `${STUBS}${block.code}\n` : `${block.code}\n`);
      const check = await runNode(['--check', file], ROOT);
      expect(check.code, `node --check README.md:${block.line}\n${check.stderr}`).toBe(0);
      if (!runs) return;
      const cwd = join(work, name.replace(/\.mjs$/, ''));
      mkdirSync(cwd);
      const r = await runNode([file], cwd, block.code.includes("'SIGTERM'"));
      expect(r.stderr, `README.md:${block.line} wrote to stderr`).toBe('');
      expect({ code: r.code, signal: r.signal }, `README.md:${block.line}\n${r.stdout}`).toEqual({
        code: 0,
        signal: null,
      });
      if (block.code.includes('schedules.upsert(')) {
        // What the comments in the stored-schedules example say it prints.
        expect(r.stdout).toMatch(/^3 0 3$/m);
        expect(r.stdout).toMatch(/^true$/m);
        expect(r.stdout).toContain("id: 'report:user-42'");
      }
    });
  }
});
