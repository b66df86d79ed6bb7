import type { JobInfo, RunStatus } from '../../scheduler/types.js';
import { CSRF_FIELD } from '../auth.js';
import { type Html, html, jobPath } from '../html.js';

export const STATUSES: readonly RunStatus[] = [
  'succeeded',
  'failed',
  'timed-out',
  'skipped',
  'running',
  'abandoned',
];

export function statusBadge(status: string): Html {
  const cls = (STATUSES as readonly string[]).includes(status) ? `s-${status}` : '';
  return html`<span class="status ${cls}">${status}</span>`;
}

export function pausedBadge(paused: boolean): Html {
  return paused
    ? html`<span class="state paused">paused</span>`
    : html`<span class="state active">active</span>`;
}

export function legend(): Html {
  return html`<div class="legend">${STATUSES.map((s) => html`<span class="s-${s}">${s}</span>`)}</div>`;
}

/** What the pages say where a job no live node defines would show its next fire times. */
export const NO_LIVE_NODE = 'not scheduled: no live node defines this job';

/**
 * Trigger now, and Pause or Resume (whichever applies): POST forms carrying the CSRF token and
 * the page to come back to. Without a live node that defines the job, Trigger now is disabled
 * (the server would answer 409: nothing would run it).
 */
export function actionButtons(job: string, paused: boolean, csrf: string, back: string, live: boolean): Html {
  const form = (action: 'trigger' | 'pause' | 'resume', label: string, primary = false, off = false) =>
    html`<form class="inline" method="post" action="${jobPath(job, `/${action}`)}">
<input type="hidden" name="${CSRF_FIELD}" value="${csrf}"><input type="hidden" name="return" value="${back}">
<button type="submit" class="${primary ? 'primary' : ''}" data-action="${action}"${off ? html` disabled title="no live node defines this job: nothing would run it"` : ''}>${label}</button></form>`;
  return html`${form('trigger', 'Trigger now', true, !live)}${paused ? form('resume', 'Resume') : form('pause', 'Pause')}`;
}

/** The next fire times of a job, or that nothing will fire because no live node defines it. */
export function nextFireCell(j: JobInfo, list: (times: Date[]) => Html): Html {
  if (j.nodes.length === 0) return html`<span class="muted no-live-node">${NO_LIVE_NODE}</span>`;
  if (j.nextFireTimes.length === 0) return html`<span class="muted">—</span>`;
  return list(j.nextFireTimes);
}

export interface PageContext {
  csrf: string;
  /** Store time, epoch ms. */
  now: number;
}
