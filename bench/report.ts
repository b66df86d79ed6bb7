/** Result types, Markdown tables, and the BENCHMARKS.md section the lock bench owns. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { formatBytes, formatMs, formatRate, formatRatio } from './stats.js';

export interface RowResult {
  label: string;
  /** Set when this row could not be measured (`unavailable: why` or `n/a: why`); the numbers are then NaN. */
  unavailable?: string;
  p50Ms: number;
  p99Ms: number;
  rate1: number;
  rate32: number;
  /** Time per op ÷ the hand-written floor's time per op, median of paired rounds (1.00 = as fast). */
  ratio1: number;
  ratio32: number;
  /** Server requests (or statements) per op, from the backend's request counter. */
  requestsPerOp: number;
  /** CPU µs per op at c=32 in this Node process, and in the server's processes (NaN when unknown). */
  nodeCpuUs: number;
  serverCpuUs: number;
}

export interface TargetResult {
  text: string;
  /** `not measured`: a row it needs is unavailable (shown as such, never as met). */
  met: boolean | 'not measured';
}

export interface BackendResult {
  backend: string;
  unavailable?: string;
  /** Server and driver, e.g. `PostgreSQL 16.4 via pg 8.16.3`. */
  server: string;
  /** How it was set up: origin, pool sizes. */
  setup: string;
  rows: RowResult[];
  targets: TargetResult[];
  notes: string[];
}

/** A row without numbers; `why` is shown as is, e.g. `unavailable: no server`. */
export function unavailableRow(label: string, why: string): RowResult {
  const nan = Number.NaN;
  return {
    label,
    unavailable: why,
    p50Ms: nan,
    p99Ms: nan,
    rate1: nan,
    rate32: nan,
    ratio1: nan,
    ratio32: nan,
    requestsPerOp: nan,
    nodeCpuUs: nan,
    serverCpuUs: nan,
  };
}

const HEADER =
  '| | p50 ms | p99 ms | ops/s @1 | ops/s @32 | ratio @1 | ratio @32 | round trips/op | CPU µs/op @32: node | server |';
const RULE = '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|';

function cell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

export function renderBackend(result: BackendResult): string {
  const out: string[] = [`### ${result.backend}`, ''];
  if (result.unavailable) {
    out.push(`unavailable: ${cell(result.unavailable)}`, '');
    return out.join('\n');
  }
  out.push([result.server, result.setup].filter((t) => t !== '').join('; '), '', HEADER, RULE);
  for (const r of result.rows) {
    if (r.unavailable) {
      out.push(`| ${r.label} | ${cell(r.unavailable)} | | | | | | | | |`);
      continue;
    }
    const fixed = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : '—');
    out.push(
      `| ${r.label} | ${formatMs(r.p50Ms)} | ${formatMs(r.p99Ms)} | ${formatRate(r.rate1)} | ${formatRate(r.rate32)} | ` +
        `${formatRatio(r.ratio1)} | ${formatRatio(r.ratio32)} | ${fixed(r.requestsPerOp, 2)} | ` +
        `${fixed(r.nodeCpuUs, 1)} | ${fixed(r.serverCpuUs, 1)} |`,
    );
  }
  out.push('');
  for (const t of result.targets) {
    const verdict = t.met === 'not measured' ? '**not measured**' : t.met ? 'met' : '**MISSED**';
    out.push(`- Target ${t.text}: ${verdict}`);
  }
  for (const n of result.notes) out.push(`- ${n}`);
  out.push('');
  return out.join('\n');
}

/**
 * Replaces the section that starts with the line `heading` (up to the next `## ` heading) in
 * `file`, or appends it; every other section is kept as it was.
 */
export function writeSection(file: string, heading: string, body: string): void {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const lines = text.split('\n');
  const section = `${heading}\n\n${body.trim()}`.split('\n');
  const start = lines.indexOf(heading);
  if (start === -1) {
    while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    lines.push('', ...section);
  } else {
    let end = lines.findIndex((line, i) => i > start && line.startsWith('## '));
    if (end === -1) end = lines.length;
    const rest = lines.slice(end);
    lines.splice(start, lines.length - start, ...section, ...(rest.length > 0 ? ['', ...rest] : []));
  }
  writeFileSync(file, `${lines.join('\n').replace(/\n+$/, '')}\n`);
}

/** Machine facts for a benchmark heading: CPU, cores, memory, OS, Node, load when the run began. */
export function machineLine(loadAtStart: number): string {
  const cpus = os.cpus();
  return (
    `${cpus[0]?.model ?? 'unknown CPU'}, ${cpus.length} cores, ${formatBytes(os.totalmem())} RAM, ` +
    `${os.type()} ${os.release()}, Node ${process.version}, 1-min load average ${loadAtStart.toFixed(2)} at start`
  );
}

/** Prints a benchmark section and, unless `printOnly` (a `--quick` or resized smoke run), writes it into BENCHMARKS.md. */
export function publish(root: string, heading: string, body: string, printOnly: boolean): void {
  console.log(`\n${heading}\n\n${body}`);
  if (printOnly) {
    console.log('printed only (a quick or resized run): BENCHMARKS.md left unchanged');
    return;
  }
  writeSection(join(root, 'BENCHMARKS.md'), heading, body);
  console.log('BENCHMARKS.md updated');
}

/** Runs a benchmark's main and exits (servers and pools must not keep the process alive). */
export function runMain(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
