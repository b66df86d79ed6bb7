import type { NodeInfo } from '../../scheduler/types.js';
import { formatDuration, type Html, html, timeCell } from '../html.js';
import type { PageContext } from './common.js';

/** `/nodes`: live nodes (heartbeat not expired). */
export function nodesPage(nodes: NodeInfo[], ctx: PageContext): Html {
  if (nodes.length === 0)
    return html`<h1>Nodes</h1><p class="empty">No live nodes: no scheduler has sent a heartbeat recently.</p>`;
  const rows = [...nodes]
    .sort((a, b) => a.id.localeCompare(b.id))
    .map(
      (n) => html`<tr>
<td class="name mono">${n.id}</td><td class="mono">${n.host}</td><td class="mono">${n.pid}</td><td class="mono">${n.version}</td>
<td>${timeCell(n.startedAt, ctx.now)}</td>
<td>${formatDuration(Math.max(0, ctx.now - n.lastSeen.getTime()))} ago</td>
</tr>`,
    );
  return html`<h1>Nodes</h1>
<table class="nodes"><thead><tr><th>Node</th><th>Host</th><th>PID</th><th>Version</th><th>Started</th><th>Last heartbeat</th></tr></thead>
<tbody>${rows}</tbody></table>`;
}
