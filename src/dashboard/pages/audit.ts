import { changeText } from '../../scheduler/observe/audit-text.js';
import type { AuditEntry } from '../../scheduler/types.js';
import { type Html, html, jobPath, timeCell } from '../html.js';
import type { PageContext } from './common.js';

/** What the `/audit` page shows: one page of entries and the filters that selected it. */
export interface AuditPageData {
  entries: AuditEntry[];
  job: string | undefined;
  scheduleId: string | undefined;
  /** The cursor this page starts after (`?after=`), if any. */
  after: string | undefined;
  limit: number;
}

/** `/audit` with these query parameters (the undefined ones left out). */
function auditPath(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams(
    Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ''),
  ).toString();
  return q === '' ? '/audit' : `/audit?${q}`;
}

/** An entry's before/after snapshots, folded. */
function details(e: AuditEntry): Html | string {
  if (e.before === undefined && e.after === undefined) return '';
  return html`<details><summary>before / after</summary>
${e.before !== undefined ? html`<div class="muted">before</div><pre class="text">${JSON.stringify(e.before, null, 2)}</pre>` : ''}
${e.after !== undefined ? html`<div class="muted">after</div><pre class="text">${JSON.stringify(e.after, null, 2)}</pre>` : ''}
</details>`;
}

/**
 * `/audit`: who changed what, newest first (`scheduler.audit()`), filtered by job or stored
 * schedule, one page at a time ("Older changes" goes on from the last entry). Every value is user
 * data (actors, notes, ids, schedule data) and goes through `html`'s escaping.
 */
export function auditPage(d: AuditPageData, ctx: PageContext): Html {
  const filter = html`<form class="filter" method="get" action="/audit">
<label>Job <input name="job" value="${d.job ?? ''}"></label>
<label>Schedule id <input name="schedule" value="${d.scheduleId ?? ''}"></label>
<input type="hidden" name="limit" value="${d.limit}">
<button type="submit">Filter</button>${d.job || d.scheduleId ? html` <a href="/audit">all changes</a>` : ''}
</form>`;
  const last = d.entries.length === d.limit ? d.entries.at(-1) : undefined;
  const base = { job: d.job, schedule: d.scheduleId, limit: String(d.limit) };
  const pager =
    last || d.after
      ? html`<nav class="pager">${d.after ? html`<a href="${auditPath(base)}" data-page="newest">Newest changes</a>` : ''}
${last ? html`<a href="${auditPath({ ...base, after: last.id })}" data-page="older">Older changes</a>` : ''}</nav>`
      : '';
  if (d.entries.length === 0)
    return html`<h1>Audit trail</h1>${filter}<p class="empty">No changes recorded${d.after ? ' before this point' : ''}.</p>${pager}`;
  const rows = d.entries.map(
    (e) => html`<tr data-action="${e.action}">
<td>${timeCell(e.at, ctx.now)}</td>
<td class="mono actor">${e.actor}</td>
<td><span class="kind">${e.action}</span></td>
<td class="name">${e.job !== undefined ? html`<a href="${jobPath(e.job)}">${e.job}</a>` : ''}${
      e.scheduleId !== undefined
        ? html`<div class="mono"><a href="${auditPath({ schedule: e.scheduleId })}">${e.scheduleId}</a></div>`
        : ''
    }</td>
<td><div class="change">${changeText(e)}</div>${details(e)}</td>
</tr>`,
  );
  return html`<h1>Audit trail</h1>
<p class="muted">Who changed what, newest first: changed job definitions, stored schedules upserted or removed,
pauses, resumes and triggers. Kept as long as the schedulers' <code>auditRetention</code> (by default, their history retention).</p>
${filter}
<table class="audit"><thead><tr><th>At</th><th>Actor</th><th>Action</th><th>Job / schedule</th><th>Change</th></tr></thead>
<tbody>${rows}</tbody></table>
${pager}`;
}
