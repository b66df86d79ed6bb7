/**
 * Which Node.js a system's child processes run on. A peer's published package may declare a newer
 * Node than the bench runs on (pg-boss 12: `engines.node` >=22.12.0, this project supports 20): its
 * seeder and nodes then run on the Node.js release {@link PINNED_NODE}, which the npm registry
 * carries as the package `node-<platform>-<arch>` (the official build, `bin/node`). It is installed
 * once into `<repo>/.cache/node-<version>/` with the ordinary npm client and reused from there;
 * when the bench's own Node is new enough, that one runs everything.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import semver from 'semver';

const run = promisify(execFile);

/** The newest Node.js 22 (LTS) release when this was written. */
export const PINNED_NODE = '22.23.5';
/** npm install of ~30 MB: generous, but a hung registry must not hold the bench. */
const INSTALL_TIMEOUT_MS = 5 * 60_000;

export interface Runtime {
  /** Executable the system's processes are forked with. */
  execPath: string;
  /** Its version, e.g. `22.23.5`. */
  version: string;
  /** How it was chosen, for the report; empty when it is the bench's own Node. */
  why: string;
}

/** The `engines.node` range an installed package declares, if any. */
export function enginesNode(root: string, pkg: string): string | undefined {
  try {
    const json = JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8'));
    const range = json?.engines?.node;
    return typeof range === 'string' ? range : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The Node.js for a package whose `engines.node` is `range` (`what` names it in messages): this
 * process's when it satisfies the range, else {@link PINNED_NODE} from `<root>/.cache`, fetched
 * first if need be. Rejects with a reason fit for the report when that cannot be had.
 */
export async function runtimeFor(root: string, range: string | undefined, what: string): Promise<Runtime> {
  const own = process.versions.node;
  if (range === undefined || semver.satisfies(own, range))
    return { execPath: process.execPath, version: own, why: '' };
  const need = `${what} declares Node ${range} (engines.node) and this bench runs on ${own}`;
  if (!semver.satisfies(PINNED_NODE, range))
    throw new Error(`${need}; the pinned Node ${PINNED_NODE} does not satisfy it either`);
  const { execPath, fetched } = await cachedNode(root, PINNED_NODE).catch((err: unknown) => {
    throw new Error(`${need}, and getting Node ${PINNED_NODE} failed: ${firstLine(err)}`);
  });
  const where = `.cache/node-${PINNED_NODE}`;
  return {
    execPath,
    version: PINNED_NODE,
    why: `${need}, so its processes run on Node ${PINNED_NODE}, the npm package ${npmName()} ${
      fetched ? `fetched into ${where}` : `from ${where} (fetched by an earlier run)`
    }`,
  };
}

/** The npm package that holds the Node.js binary for this platform. */
function npmName(): string {
  return `node-${process.platform}-${process.arch}`;
}

function firstLine(err: unknown): string {
  const e = err as { stderr?: string; message?: string };
  const text = [e.stderr, e.message ?? String(err)]
    .flatMap((t) => (t ?? '').split('\n'))
    .map((l) => l.trim())
    .find((l) => l !== '' && !l.startsWith('npm warn'));
  return (text ?? String(err)).slice(0, 200);
}

/** The binary a prefix holds for `version`, when it is there and says so. */
async function installed(prefix: string, version: string): Promise<string | undefined> {
  const dir = join(prefix, 'node_modules', npmName());
  try {
    const bin = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).bin;
    const rel = typeof bin === 'string' ? bin : bin?.node;
    if (typeof rel !== 'string') return undefined;
    const path = join(dir, rel);
    if (!existsSync(path)) return undefined;
    const { stdout } = await run(path, ['--version'], { timeout: 30_000 });
    return stdout.trim() === `v${version}` ? path : undefined;
  } catch {
    return undefined;
  }
}

/** Node `version` under `<root>/.cache/node-<version>/`, installed there first when missing. */
async function cachedNode(root: string, version: string): Promise<{ execPath: string; fetched: boolean }> {
  const prefix = join(root, '.cache', `node-${version}`);
  const ready = await installed(prefix, version);
  if (ready) return { execPath: ready, fetched: false };
  // Into a directory of its own, moved into place only once it works: an interrupted install
  // leaves nothing that a later run would take for a good one.
  const partial = `${prefix}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  try {
    // A package.json of its own, so npm takes this directory as the project, not the repo above it.
    writeFileSync(join(partial, 'package.json'), '{ "private": true }\n');
    await run(
      'npm',
      [
        'install',
        '--prefix',
        partial,
        '--no-save',
        '--no-package-lock',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        `${npmName()}@${version}`,
      ],
      {
        cwd: partial,
        timeout: INSTALL_TIMEOUT_MS,
        env: { ...process.env, npm_config_local_prefix: partial },
      },
    );
    if (!(await installed(partial, version)))
      throw new Error(`npm installed ${npmName()}@${version}, but its bin/node does not run as v${version}`);
    rmSync(prefix, { recursive: true, force: true });
    renameSync(partial, prefix);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  const path = await installed(prefix, version);
  if (!path) throw new Error(`${prefix}: Node ${version} missing after install`);
  return { execPath: path, fetched: true };
}
