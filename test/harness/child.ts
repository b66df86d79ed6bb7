import { type ChildProcess, spawn } from 'node:child_process';

/** A TypeScript script running in its own Node process (through tsx), with its output collected. */
export interface TsxChild {
  process: ChildProcess;
  /** Complete stdout lines, in order, as they arrive. */
  lines: string[];
  exited: Promise<number | null>;
  /** The last 4,000 characters of stderr. */
  stderr: () => string;
}

export interface SpawnTsxOptions {
  /** The tsconfig.json tsx compiles with (default: the working directory's), e.g. one with `experimentalDecorators`. */
  tsconfig?: string;
  /** Added to this process's environment. */
  env?: Record<string, string>;
}

/**
 * Starts `script` with `args` in a new Node process; stdin is a pipe the caller may write to.
 * `onLine` sees each complete stdout line as it arrives.
 */
export function spawnTsx(
  script: string,
  args: readonly string[],
  onLine?: (line: string) => void,
  options: SpawnTsxOptions = {},
): TsxChild {
  const env = { ...process.env, ...options.env };
  if (options.tsconfig) env.TSX_TSCONFIG_PATH = options.tsconfig;
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env,
  });
  const lines: string[] = [];
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    const parts = out.split('\n');
    out = parts.pop()!;
    lines.push(...parts);
    if (onLine) for (const line of parts) onLine(line);
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    err = (err + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { process: child, lines, exited, stderr: () => err };
}
