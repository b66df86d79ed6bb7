/**
 * Where the demo's node processes start: the compiled `node-process.js`. The nodes are separate
 * Node.js processes, so they always run compiled JavaScript, even when the demo itself runs from
 * `src/` under tsx or vitest.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { OncelyError } from '../../core/errors.js';

const NODE_ENTRY = 'node-process.js';

/**
 * The compiled node entry: next to this module in `dist/` (also in an installed package); when
 * this module runs from `src/` (tests via vitest), the repo's `dist/` build of it.
 *
 * @example
 * spawn(process.execPath, [nodeEntryPath(), '--node', 'node-1', ...args]);
 */
export function nodeEntryPath(): string {
  const here = import.meta.url;
  const sibling = fileURLToPath(new URL(`./${NODE_ENTRY}`, here));
  if (!here.endsWith('.ts')) {
    if (existsSync(sibling)) return sibling;
    throw new OncelyError(
      'INTERNAL',
      `oncely demo: ${sibling} is missing; reinstall oncely or run npm run build`,
    );
  }
  const built = fileURLToPath(new URL(`../../../dist/cli/demo/${NODE_ENTRY}`, here));
  if (existsSync(built)) return built;
  throw new OncelyError(
    'INTERNAL',
    `oncely demo: the compiled node entry ${built} is missing; run npm run build (the nodes are separate Node.js processes and run compiled JavaScript)`,
  );
}
