import type { HistoryEntry, JobInfo } from '../../scheduler/types.js';
import { type Html, html, jobPath, timeCell } from '../html.js';
import { runCounts } from '../occurrences.js';
import { describeTrigger } from '../views.js';
import { actionButtons, nextFireCell, type PageContext, pausedBadge, statusBadge } from './common.js';

export interface JobsPageData {
  jobs: JobInfo[];
  /** Recent history per job (the window the run counts are taken over). */
  recent: Map<string, HistoryEntry[]>;
  /** How many stored schedules each job has. */
  stored: Map<string, number>;
  window: number;
}

/** `/`: every job recorded in the store. */
export function jobsPage(d: JobsPageData, ctx: PageContext): Html {
  if (d.jobs.length === 0) {
    return html`<h1>Jobs</h1><p class="empty">No jobs are recorded in this store yet. A node records the
jobs it defines when it starts (<code>scheduler.start()</code>, <code>oncely run</code>).</p>`;
  }
  const rows = [...d.jobs]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((j) => {
      const recent = d.recent.get(j.name) ?? [];
      const { succeeded: ok, failed: ko, retries } = runCounts(recent);
      const stored = d.stored.get(j.name) ?? 0;
      return html`<tr data-job="${j.name}">
<td class="name"><a href="${jobPath(j.name)}">${j.name}</a></td>
<td class="mono">${describeTrigger(j.trigger)}${stored > 0 ? html`<div class="muted">+ ${stored} stored schedule${stored === 1 ? '' : 's'}</div>` : ''}</td>
<td>${nextFireCell(j, (ts) => html`<ul class="plain">${ts.map((t) => html`<li>${timeCell(t, ctx.now)}</li>`)}</ul>`)}</td>
<td>${j.lastRun ? html`${statusBadge(j.lastRun.status)}<div>${timeCell(j.lastRun.fireTime, ctx.now)}</div>` : html`<span class="muted">never</span>`}</td>
<td class="paused-state">${pausedBadge(j.paused)}</td>
<td class="counts" title="occurrences in the last ${recent.length} history records"><span class="ok">${ok} ✓</span> · <span class="ko">${ko} ✗</span>${retries > 0 ? html` <span class="muted retries">(${retries} ${retries === 1 ? 'retry' : 'retries'})</span>` : ''}</td>
<td>${j.nodes.length > 0 ? html`<ul class="plain mono">${j.nodes.map((n) => html`<li>${n}</li>`)}</ul>` : html`<span class="muted">no live node</span>`}</td>
<td class="actions">${actionButtons(j.name, j.paused, ctx.csrf, '/', j.nodes.length > 0)}</td>
</tr>`;
    });
  return html`<h1>Jobs</h1>
<table class="jobs">
<thead><tr><th>Job</th><th>Trigger</th><th>Next fire times</th><th>Last run</th><th>State</th><th title="occurrences among the last ${d.window} history records: succeeded ✓ (on a retry or not), failed or timed out ✗ after their last attempt; retries: the attempts after an occurrence's first">Recent runs</th><th>Nodes</th><th>Actions</th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
}
