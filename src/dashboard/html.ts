/**
 * HTML building with escaping by default: every value interpolated into an `html` template is
 * escaped unless it is itself `Html` (the result of `html`, or `raw` for trusted constants).
 * Job names, node ids, errors and outputs are user data, so nothing reaches a page unescaped.
 *
 * @example
 * html`<td>${job.name}</td>`   // `<img src=x>` becomes `&lt;img src=x&gt;`
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Escapes text for element content and double- or single-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

/** Marks a trusted constant as HTML. Never pass user data. */
export function raw(trusted: string): Html {
  return new Html(trusted);
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof Html) return part.value;
  if (Array.isArray(part)) return part.map((p: Part) => render(p)).join('');
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new Html(out);
}

/** `/jobs/<name>` with the name percent-encoded (the result still goes through `html`). */
export function jobPath(name: string, suffix = ''): string {
  return `/jobs/${encodeURIComponent(name)}${suffix}`;
}

/** `2024-05-01 10:00:00.000Z`: UTC, to the millisecond, the way the store keeps fire times. */
export function formatTime(date: Date | undefined): string {
  if (!date || Number.isNaN(date.getTime())) return '—';
  return date.toISOString().replace('T', ' ');
}

/** `3.2 s`, `1 min 5 s`, `2 h 3 min`, `4 d 2 h`. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(ms)} ms`;
  if (abs < 60_000) return `${(ms / 1000).toFixed(abs < 10_000 ? 1 : 0)} s`;
  const sign = ms < 0 ? '-' : '';
  const s = Math.floor(abs / 1000);
  if (s < 3600) return `${sign}${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${sign}${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/** `5 s ago` / `in 5 s`, relative to `now` (store time). */
export function relative(date: Date | undefined, now: number): string {
  if (!date) return '';
  const delta = date.getTime() - now;
  return delta >= 0 ? `in ${formatDuration(delta)}` : `${formatDuration(-delta)} ago`;
}

/** A `<time>` element: absolute UTC time, with the relative time beside it. */
export function timeCell(date: Date | undefined, now: number): Html {
  if (!date) return html`<span class="muted">—</span>`;
  return html`<time datetime="${date.toISOString()}">${formatTime(date)}</time>
    <span class="muted rel">${relative(date, now)}</span>`;
}

export interface LayoutOptions {
  title: string;
  /** Which nav entry is current. */
  active: 'jobs' | 'nodes' | 'locks' | 'job' | 'audit';
  body: Html;
  /** Store kind, shown in the footer. */
  storeKind: string;
  /** Store time the page was rendered at (epoch ms). */
  now: number;
  /** Seconds; adds a meta refresh (the `?refresh=` query of every page). */
  refresh?: number;
  /** A one-line confirmation of the last action. */
  notice?: Html;
}

/** The page frame: nav, notice, body, footer. No script; styles from /assets/style.css. */
export function layout(o: LayoutOptions): string {
  const nav = (key: LayoutOptions['active'], href: string, label: string) =>
    html`<a href="${href}"${o.active === key ? raw(' aria-current="page"') : ''}>${label}</a>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${o.refresh ? html`<meta http-equiv="refresh" content="${o.refresh}">` : ''}
<title>${o.title} · oncely</title>
<link rel="stylesheet" href="/assets/style.css">
<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">
</head>
<body>
<header class="top">
  <a class="brand" href="/">oncely</a>
  <nav>${nav('jobs', '/', 'Jobs')}${nav('nodes', '/nodes', 'Nodes')}${nav('locks', '/locks', 'Locks')}${nav('audit', '/audit', 'Audit')}<a href="/metrics">Metrics</a></nav>
</header>
<main>
${o.notice ? html`<p class="notice" role="status">${o.notice}</p>` : ''}
${o.body}
</main>
<footer>store: ${o.storeKind} · rendered ${formatTime(new Date(o.now))} · times in UTC</footer>
</body>
</html>
`.value;
}
