/**
 * The dashboard's only stylesheet and icon, served from /assets/ (CSP `default-src 'self'`): no
 * CDN, no web fonts, works offline. Status colours: succeeded green, failed red, timed-out orange,
 * skipped grey, running blue, abandoned purple.
 */
export const STYLE_CSS = `
:root {
  --bg: #f6f7f9; --fg: #1d2330; --muted: #677083; --line: #dde1e8; --card: #fff; --accent: #2f5fd0;
  --succeeded: #1f9d55; --failed: #d93838; --timed-out: #e8820c; --skipped: #8a919e;
  --running: #2f6fe0; --abandoned: #8b46c9;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 14px; color: var(--fg); background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
header.top { display: flex; align-items: center; gap: 24px; padding: 10px 24px; background: #1d2330; }
header.top a { color: #d7dced; }
header.top .brand { font-weight: 700; font-size: 17px; color: #fff; letter-spacing: .3px; }
header.top nav { display: flex; gap: 16px; }
header.top nav a[aria-current="page"] { color: #fff; border-bottom: 2px solid #7fa2ff; padding-bottom: 2px; }
main { padding: 20px 24px 40px; max-width: 1400px; }
h1 { font-size: 20px; margin: 0 0 14px; overflow-wrap: anywhere; }
h2 { font-size: 16px; margin: 24px 0 10px; }
footer { color: var(--muted); padding: 0 24px 24px; font-size: 12px; }
table { border-collapse: collapse; width: 100%; background: var(--card); border: 1px solid var(--line); }
th, td { text-align: left; padding: 8px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; text-transform: uppercase; letter-spacing: .4px; color: var(--muted); background: #fafbfc; }
td.name { font-weight: 600; overflow-wrap: anywhere; min-width: 150px; max-width: 280px; }
td ul.mono li { white-space: nowrap; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
.rel { font-size: 12px; margin-left: 4px; white-space: nowrap; }
time { white-space: nowrap; }
.empty { color: var(--muted); padding: 24px; background: var(--card); border: 1px dashed var(--line); }
.notice { background: #e9f1ff; border: 1px solid #b9cdf7; padding: 8px 12px; border-radius: 4px; }
.status { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff; font-size: 12px;
  font-weight: 600; background: var(--skipped); white-space: nowrap; }
.s-succeeded { --c: var(--succeeded); } .s-failed { --c: var(--failed); } .s-timed-out { --c: var(--timed-out); }
.s-skipped { --c: var(--skipped); } .s-running { --c: var(--running); } .s-abandoned { --c: var(--abandoned); }
.status[class*="s-"] { background: var(--c); }
.state { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; border: 1px solid var(--line); }
.state.paused { background: #fff4e0; border-color: #f0c27a; color: #8a5300; font-weight: 600; }
.state.active { background: #eaf7ef; border-color: #a8dcbc; color: #16693b; }
.counts .ok { color: var(--succeeded); font-weight: 600; } .counts .ko { color: var(--failed); font-weight: 600; }
ul.plain { list-style: none; margin: 0; padding: 0; }
form.inline { display: inline; margin: 0; }
button { font: inherit; font-size: 12.5px; padding: 4px 10px; border-radius: 4px; cursor: pointer;
  border: 1px solid #b8c0cf; background: #fff; color: var(--fg); margin: 0 4px 4px 0; }
button:hover { background: #eef2fb; border-color: var(--accent); }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button.primary:hover { background: #244db0; }
button[disabled], button[disabled]:hover { opacity: .45; cursor: not-allowed; background: #fff; border-color: var(--line); color: var(--muted); }
dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: 6px 18px; background: var(--card);
  border: 1px solid var(--line); padding: 12px 16px; margin: 0 0 14px; }
dl.summary dt { color: var(--muted); } dl.summary dd { margin: 0; }
.pager { display: flex; gap: 16px; margin: 12px 0; }
.legend { display: flex; flex-wrap: wrap; gap: 12px; color: var(--muted); font-size: 12px; margin: 6px 0 12px; }
.legend span::before { content: ""; display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  background: var(--c); margin-right: 5px; vertical-align: -1px; }
.strip { display: flex; gap: 3px; flex-wrap: wrap; margin: 4px 0 16px; }
.strip a { display: block; width: 14px; height: 22px; border-radius: 2px; background: var(--c, var(--skipped)); }
ol.timeline { list-style: none; margin: 0; padding: 0 0 0 18px; border-left: 3px solid var(--line); }
ol.timeline > li { position: relative; background: var(--card); border: 1px solid var(--line);
  border-left: 4px solid var(--c, var(--skipped)); border-radius: 4px; padding: 8px 12px; margin: 0 0 10px; }
ol.timeline > li::before { content: ""; position: absolute; left: -29px; top: 11px; width: 14px; height: 14px;
  border-radius: 50%; background: var(--c, var(--skipped)); border: 3px solid var(--bg); }
ol.timeline > li:target { box-shadow: 0 0 0 2px var(--accent); }
.occ-head { display: flex; flex-wrap: wrap; gap: 10px; align-items: baseline; }
.occ-head .fire { font-weight: 600; }
.attempt { margin-top: 6px; padding-top: 6px; border-top: 1px dashed var(--line); }
.attempt:first-of-type { border-top: 0; padding-top: 0; }
.meta { color: var(--muted); font-size: 12.5px; display: flex; flex-wrap: wrap; gap: 4px 14px; margin-top: 4px; }
.meta b { color: var(--fg); font-weight: 500; }
pre.text { white-space: pre-wrap; word-break: break-word; max-height: 260px; overflow: auto; margin: 6px 0 0;
  padding: 6px 8px; border-radius: 4px; background: #f3f4f7; border: 1px solid var(--line); }
pre.text.error { background: #fdf0f0; border-color: #f1c2c2; }
.kind { font-size: 12px; color: var(--muted); }
`;

/** A tiny icon: three dots, one lit. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1d2330"/><circle cx="4" cy="8" r="2" fill="#677083"/><circle cx="8" cy="8" r="2" fill="#1f9d55"/><circle cx="12" cy="8" r="2" fill="#677083"/></svg>`;
