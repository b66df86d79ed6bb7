import type { RunStatus } from '../../scheduler/types.js';
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

/**
 * Trigger now, and Pause or Resume (whichever applies): POST forms carrying the CSRF token and
 * the page to come back to.
 */
export function actionButtons(job: string, paused: boolean, csrf: string, back: string): Html {
  const form = (action: 'trigger' | 'pause' | 'resume', label: string, primary = false) =>
    html`<form class="inline" method="post" action="${jobPath(job, `/${action}`)}">
<input type="hidden" name="${CSRF_FIELD}" value="${csrf}"><input type="hidden" name="return" value="${back}">
<button type="submit" class="${primary ? 'primary' : ''}" data-action="${action}">${label}</button></form>`;
  return html`${form('trigger', 'Trigger now', true)}${paused ? form('resume', 'Resume') : form('pause', 'Pause')}`;
}

export interface PageContext {
  csrf: string;
  /** Store time, epoch ms. */
  now: number;
}
