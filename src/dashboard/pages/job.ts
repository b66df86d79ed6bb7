import { historyCursor } from '../../scheduler/observe/history-query.js';
import { skipText } from '../../scheduler/observe/skip-text.js';
import type { HistoryEntry, JobInfo } from '../../scheduler/types.js';
import { formatDuration, formatTime, type Html, html, jobPath, relative, timeCell } from '../html.js';
import { occurrences } from '../occurrences.js';
import { optionsText } from '../option-view.js';
import { describeTrigger, runDuration } from '../views.js';
import { actionButtons, legend, nextFireCell, type PageContext, pausedBadge, statusBadge } from './common.js';
import { type StoredSchedulesData, storedSchedulesSection } from './schedules.js';

/** `manual:<id>` is a `trigger()` request; anything else a stored schedule's id. */
function scheduleLabel(id: string | undefined): Html | string {
  if (id === undefined) return '';
  if (id.startsWith('manual:'))
    return html`<span class="kind">manual trigger <span class="mono">${id.slice('manual:'.length)}</span></span>`;
  return html`<span class="kind">schedule <span class="mono">${id}</span></span>`;
}

function attemptView(e: HistoryEntry, now: number): Html {
  const late = e.startedAt.getTime() - e.fireTime.getTime();
  return html`<div class="attempt">
<div class="meta">${statusBadge(e.status)}
<span>node <b class="mono">${e.node}</b></span>
<span>attempt <b>${e.attempt}</b></span>
<span>source <b>${e.source}</b></span>
<span>duration <b>${runDuration(e, now)}</b></span>
<span>started <b>${formatTime(e.startedAt)}</b> (${formatDuration(late)} after fire time)</span>
<span>token <b class="mono">${e.token}</b></span></div>
${e.status === 'skipped' ? html`<p class="text skip-reason">${skipText(e)}</p>` : ''}
${e.error !== undefined ? html`<pre class="text error">${e.error}</pre>` : ''}
${e.output !== undefined ? html`<pre class="text output">${e.output}</pre>` : ''}
</div>`;
}

export interface JobPageData {
  name: string;
  /** Undefined for a job with history but no record (every node that defined it is long gone). */
  info: JobInfo | undefined;
  history: HistoryEntry[];
  limit: number;
  /** Whether this page starts further back than the newest run (`?before=`). */
  paged: boolean;
  /** One page of the job's stored schedules. */
  schedules: StoredSchedulesData;
  /**
   * The next starts of the job's own trigger as `scheduler.next()` gives them (jitter, start/end,
   * exclusions and pause applied); undefined when it could not be read.
   */
  nextStarts?: Date[] | undefined;
}

/** "Older runs" after a full page (the cursor of its last entry), "Newest runs" on a later page. */
function pager(d: JobPageData): Html | string {
  const last = d.history.length === d.limit ? d.history.at(-1) : undefined;
  if (!last && !d.paged) return '';
  const page = (params: Record<string, string>) =>
    `${jobPath(d.name)}?${new URLSearchParams({ limit: String(d.limit), ...params })}`;
  return html`<nav class="pager">${d.paged ? html`<a href="${page({})}" data-page="newest">Newest runs</a>` : ''}
${last ? html`<a href="${page({ before: historyCursor(last) })}" data-page="older">Older runs</a>` : ''}</nav>`;
}

/**
 * `/jobs/:name`: the job's summary, its history as a timeline of occurrences, and below it one
 * page of its stored schedules (a job may have thousands: they must not push its runs down).
 */
export function jobPage(d: JobPageData, ctx: PageContext): Html {
  const occs = occurrences(d.history);
  const j = d.info;
  const options = j ? optionsText(j.options) : '';
  const summary = j
    ? html`<dl class="summary">
<dt>State</dt><dd><span class="paused-state">${pausedBadge(j.paused)}</span>${
        j.pause
          ? html` <span class="muted pause-info">since ${formatTime(j.pause.since)}${j.pause.actor !== undefined ? html` by <b>${j.pause.actor}</b>` : ''}${j.pause.note !== undefined ? html`: ${j.pause.note}` : ''}</span>`
          : ''
      } <a href="/audit?job=${encodeURIComponent(j.name)}">audit trail</a></dd>
<dt>Trigger</dt><dd class="mono">${describeTrigger(j.trigger)}</dd>
<dt>Next fire times</dt><dd>${nextFireCell(j, (ts) => html`${ts.map((t) => html`<div>${timeCell(t, ctx.now)}</div>`)}`)}</dd>
${
  d.nextStarts && j.trigger
    ? html`<dt>Next starts</dt><dd class="next-starts">${
        d.nextStarts.length > 0
          ? d.nextStarts.map((t) => html`<div>${timeCell(t, ctx.now)}</div>`)
          : html`<span class="muted">none${j.paused ? ' while paused' : ''}</span>`
      }</dd>`
    : ''
}
<dt>Options</dt><dd class="mono">${options}</dd>
<dt>Defined by</dt><dd class="mono">${j.nodes.length > 0 ? j.nodes.join(', ') : html`<span class="muted">no live node</span>`}</dd>
<dt>Recorded</dt><dd>${timeCell(j.updatedAt, ctx.now)}</dd>
</dl>
<div class="actions">${actionButtons(j.name, j.paused, ctx.csrf, jobPath(j.name), j.nodes.length > 0)}</div>`
    : html`<p class="notice">No node records this job any more; its history is kept until it expires.</p>`;
  // Oldest to newest, left to right: one cell per occurrence, coloured by its latest attempt.
  const strip = [...occs]
    .reverse()
    .map(
      (o) =>
        html`<a href="#${o.id}" class="s-${o.attempts[0]!.status}" title="${formatTime(o.fireTime)}: ${o.attempts[0]!.status}"></a>`,
    );
  const timeline =
    occs.length === 0
      ? html`<p class="empty">No runs recorded yet.</p>`
      : html`<div class="strip" aria-label="occurrences, oldest first">${strip}</div>
<ol class="timeline">${occs.map(
          (
            o,
          ) => html`<li id="${o.id}" class="run s-${o.attempts[0]!.status}" data-status="${o.attempts[0]!.status}">
<div class="occ-head"><span class="fire">${formatTime(o.fireTime)}</span><span class="muted rel">${relative(o.fireTime, ctx.now)}</span>
${scheduleLabel(o.scheduleId)}
${o.shard !== undefined ? html`<span class="kind">shard ${o.shard}</span>` : ''}
${o.attempts.length > 1 ? html`<span class="kind">${o.attempts.length} attempts</span>` : ''}</div>
${o.attempts.map((e) => attemptView(e, ctx.now))}
</li>`,
        )}</ol>`;
  return html`<h1>${d.name}</h1>
${summary}
<h2>History <span class="muted">(${d.paged ? 'older' : 'last'} ${d.history.length} of at most ${d.limit} records, newest first)</span></h2>
${legend()}
${timeline}
${pager(d)}
${storedSchedulesSection(d.schedules, ctx)}`;
}
