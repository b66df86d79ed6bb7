/** `oncely nodes`: live scheduler nodes (current heartbeat). `--json` prints a bare array of NodeInfo. */
import type { Command } from 'commander';
import type { NodeInfo } from '../../scheduler/types.js';
import { withInspector } from '../inspect-session.js';
import { printJson, printText } from '../output.js';
import { type StoreFlags, withStoreOptions } from '../store-option.js';
import { formatTable, isoOrDash } from '../table.js';

export function registerNodes(program: Command): void {
  withStoreOptions(program.command('nodes').description('live scheduler nodes and their last heartbeat'))
    .option('--json', 'print a JSON array')
    .action((flags: StoreFlags & { json?: boolean }) =>
      withInspector(flags, async (scheduler) => {
        const nodes = await scheduler.nodes();
        if (flags.json) printJson(nodes);
        else printText(nodes.length === 0 ? 'No live nodes.' : nodesTable(nodes));
      }),
    );
}

export function nodesTable(nodes: NodeInfo[]): string {
  return formatTable(
    ['NODE', 'HOST', 'PID', 'VERSION', 'STARTED', 'LAST SEEN'],
    nodes.map((n) => [n.id, n.host, String(n.pid), n.version, isoOrDash(n.startedAt), isoOrDash(n.lastSeen)]),
  );
}
