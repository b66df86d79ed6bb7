import { type Html, html, jobPath, timeCell } from '../html.js';
import {
  abbreviateRowData,
  describeSchedulePause,
  describeScheduleTrigger,
  type ScheduleView,
} from '../schedule-view.js';
import type { PageContext } from './common.js';

export interface StoredSchedulesData {
  job: string;
  /** This page, ascending by id. */
  views: ScheduleView[];
  /** How many the job has in all. */
  count: number;
  /** Page size. */
  limit: number;
  /** The cursor this page starts after (`?after=`), if any. */
  after: string | undefined;
}

/** `/jobs/:name?after=<id>#schedules`: the URL is built by URLSearchParams (any printable id), then escaped by `html`. */
function pageLink(job: string, after: string | undefined): string {
  const query = after === undefined ? '' : `?${new URLSearchParams({ after })}`;
  return `${jobPath(job)}${query}#schedules`;
}

/**
 * A job's "Stored schedules" section: one page of them (id, trigger, zone, next fire time, data).
 * No last run per schedule: history is keyed by fire time, so one schedule's last run would cost a
 * history scan per row; the timeline below labels each occurrence with its schedule id instead.
 */
export function storedSchedulesSection(d: StoredSchedulesData, ctx: PageContext): Html | string {
  if (d.count === 0 && d.after === undefined) return '';
  const last = d.views.length === d.limit ? d.views.at(-1) : undefined;
  const pager =
    last || d.after !== undefined
      ? html`<nav class="pager">${d.after !== undefined ? html`<a href="${pageLink(d.job, undefined)}" data-page="first">First schedules</a>` : ''}
${last ? html`<a href="${pageLink(d.job, last.schedule.id)}" data-page="next-schedules">Next schedules</a>` : ''}</nav>`
      : '';
  const rows = d.views.map(
    (view) => html`<tr data-schedule="${view.schedule.id}">
<td class="mono">${view.schedule.id}</td>
<td class="mono">${describeScheduleTrigger(view.schedule)}</td>
<td class="mono">${view.schedule.cron === undefined ? '—' : (view.schedule.timezone ?? 'UTC')}</td>
<td>${view.schedule.pause ? html`<span class="state paused" title="${describeSchedulePause(view.schedule) ?? ''}">paused</span> <span class="muted pause-info">${describeSchedulePause(view.schedule)}</span>` : timeCell(view.next, ctx.now)}</td>
<td class="mono">${abbreviateRowData(view, 80)}</td>
</tr>`,
  );
  const range =
    d.after === undefined ? `first ${d.views.length}` : `${d.views.length} after ${JSON.stringify(d.after)}`;
  return html`<h2 id="schedules">Stored schedules <span class="muted">(${d.count} in all; ${range}, by id)</span></h2>
${
  d.views.length === 0
    ? html`<p class="empty">No stored schedules after this one.</p>`
    : html`<table class="schedules">
<thead><tr><th>Id</th><th>Trigger</th><th>Time zone</th><th>Next fire time</th><th>Data</th></tr></thead>
<tbody>${rows}</tbody>
</table>`
}
${pager}`;
}
