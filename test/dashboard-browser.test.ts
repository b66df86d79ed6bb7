/**
 * The dashboard in a real browser (playwright-core driving Debian's Chromium): log in with
 * ?token=, see the jobs table and a history timeline, Pause / Resume / Trigger now through the
 * forms (CSRF, SameSite cookie, Origin checks as a browser really sends them), no script ever runs
 * from user data, and no CSP violation. Screenshots go to .test-artifacts/screenshots/.
 *
 * Chromium missing: with CI=true this fails; otherwise it is skipped with one loud line.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dashboard } from '../src/dashboard/server.js';
import { CHROMIUM_ARGS } from './fixtures/dashboard/chromium.js';
import {
  type Cluster,
  dashboardFor,
  events,
  nextEvent,
  startCluster,
  XSS_JOB,
} from './fixtures/dashboard/cluster.js';

const CHROMIUM = process.env['ONCELY_TEST_CHROMIUM'] ?? '/usr/bin/chromium';
const SCREENSHOTS = join(process.cwd(), '.test-artifacts', 'screenshots');
const TOKEN = 'browser-test-token';
const available = existsSync(CHROMIUM);

/** Runs in the page (this project compiles without the DOM lib). */
type InPage = { getComputedStyle(el: unknown): { borderLeftColor: string } };
const borderColour = (el: unknown) => (globalThis as unknown as InPage).getComputedStyle(el).borderLeftColor;

if (!available) {
  if (process.env['CI'] === 'true') {
    describe('dashboard in a browser', () => {
      it('needs Chromium', () => {
        throw new Error(`CI=true and no Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run does)`);
      });
    });
  } else {
    console.warn(
      `\n!!! SKIPPING dashboard browser tests — no Chromium at ${CHROMIUM} (apt-get install chromium, or set ONCELY_TEST_CHROMIUM)\n`,
    );
  }
}

describe.runIf(available)('dashboard in a browser', () => {
  let cluster: Cluster;
  let dashboard: Dashboard;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  const paused = async (job: string) => (await cluster.scheduler.jobs()).find((j) => j.name === job)!.paused;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    cluster = await startCluster('memory:');
    dashboard = await dashboardFor(cluster, { token: TOKEN });
    const failed = nextEvent(cluster.scheduler, 'failed', (e) => e.job === XSS_JOB);
    await cluster.scheduler.trigger(XSS_JOB);
    await Promise.all([failed, events(cluster.scheduler, 'succeeded', (e) => e.job === 'tick', 3)]);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      timeout: 60_000,
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    page.setDefaultTimeout(20_000);
    // Any script run from user data would open a dialog; CSP violations show up on the console.
    page.on('dialog', (d) => {
      problems.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
    await cluster?.close();
  });

  it('logs in with ?token= and shows the jobs table', async () => {
    const res = await page.goto(`${dashboard.url}/?token=${TOKEN}`);
    expect(res?.status()).toBe(200);
    expect(new URL(page.url()).search).toBe('');
    const cookies = await page.context().cookies();
    // Secure: Chromium keeps a Secure cookie from http://127.0.0.1 (a secure context).
    expect(cookies.find((c) => c.name === 'oncely_session')).toMatchObject({
      httpOnly: true,
      sameSite: 'Strict',
      secure: true,
    });
    await expect.poll(() => page.locator('table.jobs tbody tr').count()).toBe(3);
    const tick = page.locator('tr[data-job="tick"]');
    expect(['succeeded', 'running']).toContain(await tick.locator('.status').first().textContent());
    expect(await page.locator(`tr[data-job="${XSS_JOB.replace(/"/g, '\\"')}"] td.name`).textContent()).toBe(
      XSS_JOB,
    );
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-jobs.png'), fullPage: true });
  }, 60_000);

  it("shows a job's history as a timeline", async () => {
    await page.click('tr[data-job="tick"] td.name a');
    await page.waitForURL(/\/jobs\/tick$/);
    expect(await page.locator('h1').textContent()).toBe('tick');
    const runs = page.locator('ol.timeline > li');
    expect(await runs.count()).toBeGreaterThanOrEqual(3);
    expect(['succeeded', 'running']).toContain(await runs.first().getAttribute('data-status'));
    const colour = await page
      .locator('ol.timeline > li[data-status="succeeded"]')
      .first()
      .evaluate(borderColour);
    expect(colour).toBe('rgb(31, 157, 85)');
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-history.png'), fullPage: true });
  }, 60_000);

  it('shows the XSS job and its error as text, failed in red', async () => {
    await page.goto(`${dashboard.url}/jobs/${encodeURIComponent(XSS_JOB)}`);
    expect(await page.locator('h1').textContent()).toBe(XSS_JOB);
    const run = page.locator('ol.timeline > li').first();
    expect(await run.getAttribute('data-status')).toBe('failed');
    expect(await run.evaluate(borderColour)).toBe('rgb(217, 56, 56)');
    expect(await run.locator('pre.error').textContent()).toContain('</script><script>alert(2)</script>');
    expect(await page.locator('img').count()).toBe(0);
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-history-failed.png'), fullPage: true });
  }, 60_000);

  it('Pause, Resume and Trigger now work through the forms', async () => {
    await page.goto(`${dashboard.url}/jobs/nightly-report`);
    expect(await page.locator('.paused-state').textContent()).toBe('active');
    expect(await page.locator('ol.timeline > li').count()).toBe(0);

    await page.click('button[data-action="pause"]');
    await page.waitForURL(/done=pause/);
    expect(await page.locator('.paused-state').textContent()).toBe('paused');
    expect(await page.locator('.notice').textContent()).toContain('Paused nightly-report');
    expect(await paused('nightly-report')).toBe(true);

    await page.click('button[data-action="resume"]');
    await page.waitForURL(/done=resume/);
    expect(await page.locator('.paused-state').textContent()).toBe('active');
    expect(await paused('nightly-report')).toBe(false);

    const ran = nextEvent(cluster.scheduler, 'succeeded', (e) => e.job === 'nightly-report');
    await page.click('button[data-action="trigger"]');
    await page.waitForURL(/done=trigger/);
    expect((await ran).source).toBe('manual');
    await page.reload();
    const run = page.locator('ol.timeline > li').first();
    expect(await run.getAttribute('data-status')).toBe('succeeded');
    expect(await run.textContent()).toContain('source manual');
    expect(await run.locator('pre.output').textContent()).toMatch(/^report for /);

    // Pause from the jobs page too: the form comes back to it.
    await page.goto(`${dashboard.url}/`);
    await page.click('tr[data-job="tick"] button[data-action="pause"]');
    await page.waitForURL(/\/\?done=pause/);
    expect(await page.locator('tr[data-job="tick"] .paused-state').textContent()).toBe('paused');
    expect(await paused('tick')).toBe(true);
    await page.click('tr[data-job="tick"] button[data-action="resume"]');
    await page.waitForURL(/\/\?done=resume/);
    expect(await paused('tick')).toBe(false);
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-jobs-after-actions.png'), fullPage: true });

    // The overview for docs/dashboard.png: every kind of row (failed, succeeded, paused), no notice.
    await cluster.scheduler.pause('nightly-report');
    await page.goto(`${dashboard.url}/`);
    expect(await page.locator('tr[data-job="nightly-report"] .paused-state').textContent()).toBe('paused');
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-overview.png'), fullPage: true });
  }, 90_000);

  it('shows nodes and locks', async () => {
    await page.goto(`${dashboard.url}/nodes`);
    expect(await page.locator('table.nodes tbody tr').count()).toBe(1);
    expect(await page.locator('table.nodes td.name').textContent()).toBe('node-a');
    await page.goto(`${dashboard.url}/locks?holds=1`);
    expect(await page.locator('table.locks tbody tr').count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-locks.png'), fullPage: true });
  }, 60_000);

  it('ran no script and violated no CSP rule', () => {
    expect(problems).toEqual([]);
  });
});
