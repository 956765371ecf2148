/**
 * O2, O3 in a real browser: the dashboard (src/ops) over a queue with work in every state, loaded in
 * headless Chromium (playwright-core with the npm Chromium, as the report test does). Its numbers are
 * read off the page and compared with signals() at that instant; hostile values stay text; the
 * confirm-stopped of an uncertain task is driven end to end with the token, and refused without it.
 * Runs on SQLite, and on PostgreSQL (LEASEHOLD_PG_URL, set by vitest's global setup).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { freshPgStore } from '../../src/store/__test-helpers__/pg-test-store.ts';
import { HOSTILE, populate } from '../../src/ops/__test-helpers__/populated.ts';
import { startOpsServer } from '../../src/ops/server.ts';
import { CHROMIUM_INSTALL_HINT, findChromium, launchChromium } from './chromium.ts';
import { liveTimelineSvg } from './live-timeline.ts';

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-dashboard-'));
/** Screenshots go here (not in git): LEASEHOLD_SCREENSHOT_DIR, else leasehold-dashboard-shots in the temp directory. */
const SHOTS = process.env.LEASEHOLD_SCREENSHOT_DIR ?? join(tmpdir(), 'leasehold-dashboard-shots');
mkdirSync(SHOTS, { recursive: true });
let browser: Browser | undefined;
afterAll(async () => {
  await browser?.close();
  rmSync(scratch, { recursive: true, force: true });
});

async function theBrowser(): Promise<Browser> {
  if (browser !== undefined) return browser;
  const binary = await findChromium();
  if (binary === undefined) throw new Error(`headless Chromium is needed for this test and is not installed: run \`${CHROMIUM_INSTALL_HINT}\`, or set LEASEHOLD_CHROMIUM to the binary`);
  browser = await launchChromium(binary);
  return browser;
}

async function loaded(page: Page, count = 1): Promise<void> {
  // Runs in the page; the project's types have no DOM library, so the page's globals are named as such.
  await page.waitForFunction((n) => Number((globalThis as unknown as { document: { body: { dataset: Record<string, string | undefined> } } }).document.body.dataset.loaded ?? 0) >= n, count, { timeout: 30_000 });
}

const text = (page: Page, selector: string) => page.locator(selector).first().innerText();

for (const store of ['sqlite', 'postgres'] as const) {
  describe(`the dashboard in Chromium (${store})`, () => {
    it('shows the queue as signals() has it, keeps hostile values as text, and confirms a stop only with the token', async () => {
      const { queue, ids } = await populate(store === 'sqlite' ? join(scratch, 'queue.sqlite') : freshPgStore());
      const token = 'token-for-the-test';
      const server = await startOpsServer({ queue, db: store, configuration: 'workers.json', host: '127.0.0.1', port: 0, allowActions: true, token, timeline: liveTimelineSvg, refreshMs: 60_000 });
      const page = await (await theBrowser()).newPage({ viewport: { width: 1400, height: 1800 } });
      const problems: string[] = [];
      page.on('console', (message) => void (message.type() === 'error' && problems.push(message.text())));
      page.on('pageerror', (error) => problems.push(String(error)));
      page.on('dialog', (dialog) => {
        problems.push(`dialog: ${dialog.message()}`);
        void dialog.dismiss();
      });
      try {
        await page.goto(server.url);
        await loaded(page);
        // The header names the queue and the configuration its actions run with (the populated queue's own).
        expect(await text(page, '#db')).toBe(`${store} (queue configuration: workers.json)`);
        const signals = await queue.signals();
        const number = async (key: string) => Number(await text(page, `[data-k="${key}"]`));
        expect(await number('ready')).toBe(signals.depth.reduce((sum, { n }) => sum + n, 0));
        expect(await number('running')).toBe(signals.leases.length);
        expect(await number('uncertain')).toBe(signals.awaitingReconciliation);
        expect(await number('dead-letters')).toBe((await queue.deadLetters()).length);
        expect(await number('paused')).toBe((await queue.pausedTenants()).length);
        for (const { tenant, n } of signals.depth) expect(Number(await text(page, `tr[data-tenant="${tenant}"] [data-k="ready"]`)), tenant).toBe(n);
        expect(await page.locator('table[data-table="running"] tbody tr').count()).toBe(signals.leases.length);
        expect(await page.locator('table[data-table="uncertain"] tbody tr[data-task]').count()).toBe(signals.awaitingReconciliation);
        await page.screenshot({ path: join(SHOTS, `dashboard-overview-${store}.png`), fullPage: true });

        // The hostile pause reason is on the overview; the hostile tenant, topic, payload and error on its task page.
        expect(await page.locator('table[data-table="paused"]').innerText()).toContain(HOSTILE);
        await page.goto(`${server.url}task/${ids.hostile}`);
        await loaded(page);
        expect(await text(page, '#db')).toBe(`${store} (queue configuration: workers.json)`);
        expect(await text(page, 'dd[data-k="tenant"]')).toBe(HOSTILE);
        expect(await text(page, 'dd[data-k="error"]')).toBe(`business_error: ${HOSTILE}`);
        expect(await page.locator('table[data-table="events"]').innerText()).toContain('<script>');
        expect(await page.locator('main script, main b, main img[src="x"]').count()).toBe(0);
        const timeline = page.locator('img[data-k="timeline"]');
        await expect.poll(() => timeline.evaluate((img) => { const image = img as unknown as { complete: boolean; naturalWidth: number }; return image.complete && image.naturalWidth > 0; })).toBe(true);
        await page.screenshot({ path: join(SHOTS, `dashboard-task-${store}.png`), fullPage: true });
        await page.goto(`${server.url}dead-letters`);
        await loaded(page);
        expect(await page.locator('table[data-table="dead-letters"] tbody tr[data-task]').count()).toBe(1);

        // Without the token: refused, the task still uncertain.
        await page.goto(`${server.url}task/${ids.uncertain}`);
        await loaded(page);
        const confirm = page.locator('button[data-action="confirm-stopped"]');
        await confirm.click();
        await confirm.click();
        await expect.poll(() => text(page, '#flash')).toContain('forbidden');
        expect((await queue.get(ids.uncertain))?.state).toBe('uncertain');

        // With the token, as the CLI prints it (#token=...): done, and the page shows the new state.
        await page.goto(`${server.url}task/${ids.uncertain}#token=${token}`);
        await loaded(page);
        await page.locator('button[data-action="confirm-stopped"]').click();
        await page.locator('button[data-action="confirm-stopped"]').click();
        await expect.poll(() => text(page, '#flash')).toContain('confirmed stopped');
        expect((await queue.get(ids.uncertain))?.state).toBe('failed');
        await expect.poll(() => text(page, 'dd[data-k="state"]')).toBe('failed');
        expect((await queue.events(ids.uncertain)).at(-1)).toMatchObject({ type: 'stop_confirmed', data: { source: 'operator (dashboard)' } });
        await page.screenshot({ path: join(SHOTS, `dashboard-confirmed-${store}.png`), fullPage: true });
        expect(problems.filter((problem) => !problem.includes('403'))).toEqual([]);
      } finally {
        await page.close();
        await server.close();
        await queue.close();
      }
    });
  });
}
