import { formatDuration, type Html, html, jobPath, timeCell } from '../html.js';
import type { LeaseView } from '../views.js';
import type { PageContext } from './common.js';

const KIND_LABEL = {
  occurrence: 'occurrence claim',
  gate: 'overlap gate',
  page: 'page of runs',
  lock: 'lock',
  other: 'lease',
} as const;

/**
 * `/locks`: leases held now, on the store clock. The "done" holds of finished occurrences (one per
 * fire time for an hour or more: thousands for a job that fires every second) are counted, and
 * listed only with `?holds=1`.
 */
export function locksPage(leases: LeaseView[], limit: number, showHolds: boolean, ctx: PageContext): Html {
  const holds = leases.filter((l) => l.state === 'hold');
  const shown = showHolds ? leases : leases.filter((l) => l.state !== 'hold');
  const intro = html`<p class="muted">Unexpired leases on the store clock. After its run, an occurrence claim stays
held as a "done" marker (state <i>hold</i>) so that a late node never runs that fire time again.</p>
<p class="holds">${holds.length} done hold${holds.length === 1 ? '' : 's'}${
    holds.length > 0
      ? showHolds
        ? html` listed · <a href="/locks">hide them</a>`
        : html` not listed · <a href="/locks?holds=1">show them</a>`
      : ''
  }</p>`;
  const more =
    leases.length >= limit
      ? html`<p class="muted">Read the first ${limit} leases (by key); add <code>?limit=</code> for more.</p>`
      : '';
  if (shown.length === 0)
    return html`<h1>Locks</h1>${intro}<p class="empty">No ${holds.length > 0 ? 'other ' : ''}leases are held.</p>${more}`;
  const rows = shown.map(
    (l) => html`<tr>
<td><span class="kind">${KIND_LABEL[l.kind]}</span>${l.state ? html`<div class="state ${l.state === 'running' ? 'active' : ''}">${l.state}</div>` : ''}</td>
<td class="name">${l.name !== undefined && l.kind !== 'lock' && l.kind !== 'other' ? html`<a href="${jobPath(l.name)}">${l.name}</a>` : (l.name ?? '')}</td>
<td class="mono">${l.key}</td><td class="mono">${l.owner}</td><td class="mono">${l.token}</td>
<td>${timeCell(new Date(l.acquiredAt), ctx.now)}</td>
<td>${timeCell(new Date(l.expiresAt), ctx.now)}${l.state === 'hold' ? '' : html`<div class="muted">${formatDuration(l.expiresAt - l.acquiredAt)} lease</div>`}</td>
</tr>`,
  );
  return html`<h1>Locks</h1>${intro}
<table class="locks"><thead><tr><th>Kind</th><th>Job / lock</th><th>Key</th><th>Owner</th><th>Token</th><th>Acquired</th><th>Expires</th></tr></thead>
<tbody>${rows}</tbody></table>
${more}`;
}
